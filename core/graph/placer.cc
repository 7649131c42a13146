// Placement: each compilable node is lowered alone (with its inferred input types; unknown
// sizes probed as 1, since capability depends on op, attributes and types, not sizes) and the
// plugins are asked about that small module, once per distinct op + attributes + input types.
#include "core/graph/placer.h"

#include <iostream>

#include "core/graph/lowering.h"
#include "core/graph/op_registry.h"
#include "core/graph/verifier.h"
#include "fmt/format.h"

namespace kiln::graph {
namespace {

TensorShape Probe(TensorShape s) {
  for (int64_t& d : s.dims) {
    if (d < 0) d = 1;
  }
  return s;
}

// What the capability answer can depend on: op, attributes (but the device) and input types.
std::string CacheKey(const Node& n, const std::vector<ValueInfo>& in) {
  std::string key = n.op + "[";
  for (const auto& [name, v] : n.attrs) {
    if (name != "device") key += name + "=" + v.ToString() + ",";
  }
  key += "](";
  for (const ValueInfo& v : in) {
    key += fmt::format("{}/{},", PrimitiveTypeName(v.dtype), v.shape.rank());
  }
  return key + ")";
}

std::string NodeLabel(const Node& n) { return fmt::format("node {} ({})", n.name, n.op); }

}  // namespace

std::ostream& Placer::log() const { return options_.log ? *options_.log : std::cerr; }

absl::StatusOr<std::string> Placer::BestPlugin(const std::string& key,
                                               const std::string& probe_text) {
  if (auto it = best_.find(key); it != best_.end()) return it->second;
  ++queries_;
  absl::StatusOr<Plugin*> p = registry_.Select("auto", probe_text);
  absl::StatusOr<std::string> answer =
      p.ok() ? absl::StatusOr<std::string>((*p)->name()) : absl::StatusOr<std::string>(p.status());
  best_.emplace(key, answer);
  return answer;
}

bool Placer::Accepts(const std::string& plugin, const std::string& key,
                     const std::string& probe_text, std::string* why) {
  const std::string k = plugin + "|" + key;
  auto it = accepts_.find(k);
  if (it == accepts_.end()) {
    ++queries_;
    std::string answer;
    absl::StatusOr<Plugin*> p = registry_.Get(plugin);
    if (!p.ok()) {
      answer = std::string(p.status().message());
    } else if (absl::StatusOr<CapabilityReport> r = (*p)->Capability(probe_text); !r.ok()) {
      if (r.status().code() != absl::StatusCode::kUnimplemented) {
        answer = std::string(r.status().message());
      }
    } else if (!r->unsupported.empty()) {
      answer = fmt::format("'{}' {}", r->unsupported.front().first, r->unsupported.front().second);
    }
    it = accepts_.emplace(k, answer).first;
  }
  *why = it->second;
  return why->empty();
}

absl::StatusOr<Placement> Placer::Place(const Graph& g) {
  // Input types with unknown sizes probed as 1.
  std::map<std::string, ValueInfo> feeds;
  for (const Node* p : g.Placeholders()) {
    const AttrValue* dtype = p->FindAttr("dtype");
    const AttrValue* shape = p->FindAttr("shape");
    if (dtype != nullptr && shape != nullptr)
      feeds[p->name] = {dtype->type(), Probe(shape->shape())};
  }
  absl::StatusOr<ShapeMap> shapes = InferShapes(g, feeds);
  if (!shapes.ok()) return shapes.status();
  const OpRegistry& reg = OpRegistry::Global();
  Placement placement;
  for (const auto& node : g.nodes()) {
    const Node& n = *node;
    if (n.op == "Placeholder") continue;
    const OpDef* def = reg.Find(n.op);
    if (def == nullptr || !def->compilable(n)) {
      placement[n.name] = "host";
      continue;
    }
    std::vector<ValueInfo> in;
    for (const Edge& e : n.inputs) {
      ValueInfo v = shapes->at(e.node).at(e.index);
      v.shape = Probe(v.shape);
      in.push_back(v);
    }
    std::vector<Edge> outs;
    for (int k = 0; k < def->num_outputs; ++k) outs.push_back({n.name, k});
    absl::StatusOr<std::unique_ptr<HloModule>> probe =
        LowerNodes(g, {&n}, n.inputs, in, outs, "placement_probe");
    if (!probe.ok()) {
      return absl::Status(probe.status().code(),
                          fmt::format("{}: placement probe: {}", NodeLabel(n),
                                      std::string(probe.status().message())));
    }
    const std::string text = (*probe)->ToString();
    const std::string key = CacheKey(n, in);
    // The requested device, if any, when it is usable and accepts the node.
    std::string requested = !n.requested_device.empty() ? n.requested_device
                            : options_.device != "auto" ? options_.device
                                                        : "";
    if (!requested.empty()) {
      std::string why;
      if (Accepts(requested, key, text, &why)) {
        placement[n.name] = requested;
        continue;
      }
      const bool fallback = options_.soft_placement && requested == n.requested_device;
      if (!fallback) {
        absl::StatusOr<Plugin*> usable = registry_.Get(requested);
        if (!usable.ok()) {
          return absl::Status(
              usable.status().code(),
              fmt::format("{}: {}", NodeLabel(n), std::string(usable.status().message())));
        }
        return absl::FailedPreconditionError(
            fmt::format("{}: device '{}' cannot run it: {}", NodeLabel(n), requested, why));
      }
      std::string instead = options_.device;
      if (instead != "auto" && !Accepts(instead, key, text, &why)) {
        return absl::FailedPreconditionError(
            fmt::format("{}: soft placement: fallback device '{}' cannot run it: {}", NodeLabel(n),
                        instead, why));
      }
      if (instead == "auto") {
        absl::StatusOr<std::string> best = BestPlugin(key, text);
        if (!best.ok()) {
          return absl::Status(
              best.status().code(),
              fmt::format("{}: {}", NodeLabel(n), std::string(best.status().message())));
        }
        instead = *best;
      }
      log() << fmt::format("kiln graph: soft placement: {} requested '{}' ({}); using {}\n",
                           NodeLabel(n), requested, why, instead);
      placement[n.name] = instead;
      continue;
    }
    absl::StatusOr<std::string> best = BestPlugin(key, text);
    if (!best.ok()) {
      return absl::Status(best.status().code(), fmt::format("{}: {}", NodeLabel(n),
                                                            std::string(best.status().message())));
    }
    placement[n.name] = *best;
  }
  return placement;
}

}  // namespace kiln::graph
