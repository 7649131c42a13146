// Shardy's sharding text (see spmd_sdy.h).
#include "hlo/passes/spmd_sdy.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "absl/status/status.h"

namespace kiln {
namespace {

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError("cannot read Shardy text '" + std::string(text) +
                                    "': " + std::string(why));
}

// The quoted names in `text` ("x", "y"), in order.
std::vector<std::string> QuotedNames(std::string_view text) {
  std::vector<std::string> out;
  for (size_t at = text.find('"'); at != std::string_view::npos; at = text.find('"', at + 1)) {
    size_t end = text.find('"', at + 1);
    if (end == std::string_view::npos) break;
    out.emplace_back(text.substr(at + 1, end - at - 1));
    at = end;
  }
  return out;
}

std::vector<int64_t> Ints(std::string_view text) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    int64_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      v = v * 10 + (text[i++] - '0');
    out.push_back(v);
  }
  return out;
}

// The text between `open` at `at` and its matching `close`.
std::string_view Balanced(std::string_view text, size_t at, char open, char close) {
  int depth = 0;
  for (size_t i = at; i < text.size(); ++i) {
    if (text[i] == open) ++depth;
    if (text[i] == close && --depth == 0) return text.substr(at + 1, i - at - 1);
  }
  return {};
}

absl::StatusOr<SdyMesh> ParseMesh(std::string_view body) {
  // body: `["x"=2, "y"=2], device_ids=[...]` (no device_ids: the iota order)
  SdyMesh mesh;
  size_t open = body.find('[');
  if (open == std::string_view::npos) return Bad(body, "expected the mesh axes");
  std::string_view axes = Balanced(body, open, '[', ']');
  size_t at = 0;
  for (const std::string& name : QuotedNames(axes)) {
    at = axes.find('"' + name + '"', at) + name.size() + 2;
    size_t eq = axes.find('=', at);
    std::vector<int64_t> size = eq == std::string_view::npos
                                    ? std::vector<int64_t>{}
                                    : Ints(axes.substr(eq, axes.find(',', eq) - eq));
    if (size.empty()) return Bad(body, "expected \"axis\"=size");
    mesh.axes.push_back(name);
    mesh.sizes.push_back(size[0]);
  }
  int64_t n =
      std::accumulate(mesh.sizes.begin(), mesh.sizes.end(), int64_t{1}, std::multiplies<int64_t>());
  size_t ids = body.find("device_ids=");
  if (ids != std::string_view::npos) {
    mesh.device_ids = Ints(Balanced(body, body.find('[', ids), '[', ']'));
  } else {
    mesh.device_ids.resize(n);
    std::iota(mesh.device_ids.begin(), mesh.device_ids.end(), 0);
  }
  if (static_cast<int64_t>(mesh.device_ids.size()) != n)
    return Bad(body, "device_ids do not list one device per mesh position");
  return mesh;
}

// `<@mesh, [{"x"}, {}]>` (or an inline `<mesh<...>, [...]>`) as a tiled sharding.
absl::StatusOr<HloSharding> ParseOne(std::string_view text,
                                     const std::map<std::string, SdyMesh>& meshes) {
  SdyMesh inline_mesh;
  const SdyMesh* mesh = nullptr;
  size_t dims_at;
  if (size_t at = text.find('@'); at != std::string_view::npos && at < text.find('[')) {
    size_t end = text.find(',', at);
    std::string name(text.substr(at + 1, end - at - 1));
    auto it = meshes.find(name);
    if (it == meshes.end()) return Bad(text, "unknown mesh @" + name);
    mesh = &it->second;
    dims_at = text.find('[', end);
  } else {
    size_t open = text.find("mesh<");
    if (open == std::string_view::npos) return Bad(text, "expected a mesh");
    std::string_view body = Balanced(text, open + 4, '<', '>');
    absl::StatusOr<SdyMesh> m = ParseMesh(body);
    if (!m.ok()) return m.status();
    inline_mesh = *std::move(m);
    mesh = &inline_mesh;
    dims_at = text.find('[', open + 5 + body.size());
  }
  if (dims_at == std::string_view::npos) return Bad(text, "expected the dimension shardings");
  std::string_view dims = Balanced(text, dims_at, '[', ']');
  // Each dimension's axes, as positions in the mesh, major to minor.
  std::vector<std::vector<size_t>> dim_axes;
  for (size_t at = dims.find('{'); at != std::string_view::npos; at = dims.find('{', at + 1)) {
    std::string_view one = Balanced(dims, at, '{', '}');
    if (one.find(':') != std::string_view::npos)
      return absl::UnimplementedError("Shardy sub-axes ('" + std::string(one) +
                                      "') are not supported");
    std::vector<size_t> axes;
    for (const std::string& name : QuotedNames(one)) {
      auto it = std::find(mesh->axes.begin(), mesh->axes.end(), name);
      if (it == mesh->axes.end()) return Bad(text, "unknown mesh axis " + name);
      axes.push_back(static_cast<size_t>(it - mesh->axes.begin()));
    }
    dim_axes.push_back(std::move(axes));
    at += one.size() + 1;
  }
  std::vector<bool> used(mesh->axes.size(), false);
  HloSharding out;
  out.kind = HloSharding::Kind::kTiled;
  for (const std::vector<size_t>& axes : dim_axes) {
    int64_t t = 1;
    for (size_t a : axes) {
      t *= mesh->sizes[a];
      used[a] = true;
    }
    out.tile_dims.push_back(t);
  }
  // The axes no dimension uses make copies: the last tile dimension.
  int64_t copies = 1;
  for (size_t a = 0; a < used.size(); ++a)
    if (!used[a]) copies *= mesh->sizes[a];
  if (copies > 1) {
    out.tile_dims.push_back(copies);
    out.last_tile_dim_replicate = true;
  }
  int64_t n = static_cast<int64_t>(mesh->device_ids.size());
  if (copies == n) return HloSharding{};  // replicated
  out.devices.assign(n, -1);
  std::vector<int64_t> coord(mesh->axes.size(), 0);
  for (int64_t pos = 0; pos < n; ++pos) {
    // The tile (and copy) mesh position `pos` holds, flattened row-major over tile_dims.
    int64_t flat = 0;
    for (size_t d = 0; d < dim_axes.size(); ++d) {
      int64_t idx = 0;
      for (size_t a : dim_axes[d]) idx = idx * mesh->sizes[a] + coord[a];
      flat = flat * out.tile_dims[d] + idx;
    }
    if (out.last_tile_dim_replicate) {
      int64_t copy = 0;
      for (size_t a = 0; a < used.size(); ++a)
        if (!used[a]) copy = copy * mesh->sizes[a] + coord[a];
      flat = flat * copies + copy;
    }
    out.devices[flat] = mesh->device_ids[pos];
    for (int a = static_cast<int>(coord.size()) - 1; a >= 0; --a) {
      if (++coord[a] < mesh->sizes[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, SdyMesh>> ParseSdyMeshes(std::string_view attributes) {
  std::map<std::string, SdyMesh> out;
  std::string text = SdyAttribute(attributes, "xla.sdy.meshes");
  if (text.empty()) {  // written as {xla.sdy.meshes={...}} rather than quoted
    size_t at = attributes.find("xla.sdy.meshes=");
    if (at == std::string_view::npos) return out;
    text = std::string(Balanced(attributes, attributes.find('{', at), '{', '}'));
  }
  std::string_view rest = text;
  for (size_t mark = rest.find("#sdy.mesh<"); mark != std::string_view::npos;
       mark = rest.find("#sdy.mesh<")) {
    std::string_view before = rest.substr(0, mark);
    size_t eq = before.rfind('=');
    size_t start = before.find_last_of("{,", eq);
    std::string name(before.substr(start == std::string_view::npos ? 0 : start + 1,
                                   eq - (start == std::string_view::npos ? 0 : start + 1)));
    name.erase(std::remove_if(name.begin(), name.end(),
                              [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               name.end());
    std::string_view body = Balanced(rest, mark + 9, '<', '>');
    absl::StatusOr<SdyMesh> mesh = ParseMesh(body);
    if (!mesh.ok()) return mesh.status();
    out[name] = *std::move(mesh);
    rest = rest.substr(mark + 10 + body.size());
  }
  return out;
}

std::string SdyAttribute(std::string_view attributes, std::string_view key) {
  std::string pattern = std::string(key) + "=\"";
  size_t at = attributes.find(pattern);
  if (at == std::string_view::npos) return "";
  std::string out;
  for (size_t i = at + pattern.size(); i < attributes.size() && attributes[i] != '"'; ++i) {
    if (attributes[i] == '\\' && i + 1 < attributes.size()) ++i;
    out += attributes[i];
  }
  return out;
}

absl::StatusOr<std::vector<HloSharding>> ParseSdyShardings(
    std::string_view text, const std::map<std::string, SdyMesh>& meshes) {
  size_t open = text.find('[');
  if (text.find("sharding_per_value<") == std::string_view::npos || open == std::string_view::npos)
    return Bad(text, "expected #sdy.sharding_per_value<[...]>");
  std::string_view list = Balanced(text, open, '[', ']');
  std::vector<HloSharding> out;
  for (size_t at = list.find('<'); at != std::string_view::npos; at = list.find('<', at + 1)) {
    std::string_view one = Balanced(list, at, '<', '>');
    absl::StatusOr<HloSharding> s = ParseOne(one, meshes);
    if (!s.ok()) return s.status();
    out.push_back(*std::move(s));
    at += one.size() + 1;
  }
  return out;
}

std::vector<std::string> ParseSdyManualAxes(std::string_view text) { return QuotedNames(text); }

}  // namespace kiln
