/* Reading and writing .npy files (format 1.0/2.0, little-endian, C order) for programs that
 * link a `kiln aot` artifact. Plain C99; header-only (the functions are static). */
#ifndef KILN_AOT_NPY_IO_H_
#define KILN_AOT_NPY_IO_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NumPy's descr for a Kiln element type name ("f32" -> "<f4"); NULL when .npy has none. */
static const char* npy_descr(const char* type) {
  static const char* const table[][2] = {{"f32", "<f4"}, {"f64", "<f8"}, {"f16", "<f2"},
                                         {"s8", "|i1"},  {"s16", "<i2"}, {"s32", "<i4"},
                                         {"s64", "<i8"}, {"u8", "|u1"},  {"u16", "<u2"},
                                         {"u32", "<u4"}, {"u64", "<u8"}, {"pred", "|b1"}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (strcmp(table[i][0], type) == 0) return table[i][1];
  return NULL;
}

/* Reads `path` into a fresh buffer of exactly `bytes` bytes after checking that the file holds
 * a C-order array of `type` with dimensions dims[0..rank). On any mismatch prints a message
 * naming the file and returns NULL. */
static void* npy_read(const char* path, const char* type, int rank, const int64_t* dims,
                      size_t bytes) {
  const char* descr = npy_descr(type);
  FILE* f = fopen(path, "rb");
  unsigned char magic[10];
  char header[4096], want[256], shape[200];
  size_t header_len, pos = 0;
  void* data = NULL;
  int i;
  if (descr == NULL) {
    fprintf(stderr, "%s: element type %s has no .npy form\n", path, type);
    return NULL;
  }
  if (f == NULL) {
    fprintf(stderr, "%s: cannot open\n", path);
    return NULL;
  }
  if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "%s: not a .npy file\n", path);
    goto fail;
  }
  header_len = magic[8] | (size_t)magic[9] << 8;
  if (magic[6] >= 2) { /* version 2 and 3: a 4-byte length */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) goto truncated;
    header_len |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  if (header_len >= sizeof header) {
    fprintf(stderr, "%s: .npy header too long\n", path);
    goto fail;
  }
  if (fread(header, 1, header_len, f) != header_len) goto truncated;
  header[header_len] = '\0';
  /* The shape as NumPy writes it: (2, 3) / (7,) / (). */
  shape[0] = '\0';
  for (i = 0; i < rank; ++i)
    pos += (size_t)snprintf(shape + pos, sizeof shape - pos, "%s%lld", i ? ", " : "",
                            (long long)dims[i]);
  if (rank == 1) snprintf(shape + pos, sizeof shape - pos, ",");
  snprintf(want, sizeof want, "'shape': (%s)", shape);
  if (strstr(header, "'fortran_order': False") == NULL) {
    fprintf(stderr, "%s: only C-order arrays are read\n", path);
    goto fail;
  }
  if (strstr(header, want) == NULL) {
    fprintf(stderr, "%s: shape is not (%s): header %s\n", path, shape, header);
    goto fail;
  }
  snprintf(want, sizeof want, "'descr': '%s'", descr);
  if (strstr(header, want) == NULL) {
    fprintf(stderr, "%s: dtype is not %s (%s): header %s\n", path, descr, type, header);
    goto fail;
  }
  data = malloc(bytes ? bytes : 1);
  if (data == NULL || fread(data, 1, bytes, f) != bytes) goto truncated;
  if (fgetc(f) != EOF) {
    fprintf(stderr, "%s: more data than the shape holds\n", path);
    goto fail;
  }
  fclose(f);
  return data;
truncated:
  fprintf(stderr, "%s: truncated\n", path);
fail:
  free(data);
  fclose(f);
  return NULL;
}

/* Writes an array as a version 1.0 .npy file; 0 on success. */
static int npy_write(const char* path, const char* type, int rank, const int64_t* dims,
                     const void* data, size_t bytes) {
  const char* descr = npy_descr(type);
  char dict[512], shape[200];
  size_t pos = 0, len, total;
  int i;
  FILE* f;
  unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  if (descr == NULL) {
    fprintf(stderr, "%s: element type %s has no .npy form\n", path, type);
    return 1;
  }
  shape[0] = '\0';
  for (i = 0; i < rank; ++i)
    pos += (size_t)snprintf(shape + pos, sizeof shape - pos, "%s%lld", i ? ", " : "",
                            (long long)dims[i]);
  if (rank == 1) snprintf(shape + pos, sizeof shape - pos, ",");
  len = (size_t)snprintf(dict, sizeof dict,
                         "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
  total = (10 + len + 1 + 63) / 64 * 64; /* the data starts 64-byte aligned */
  while (10 + len + 1 < total) dict[len++] = ' ';
  dict[len++] = '\n';
  preamble[8] = (unsigned char)(len & 0xff);
  preamble[9] = (unsigned char)(len >> 8);
  f = fopen(path, "wb");
  if (f == NULL || fwrite(preamble, 1, 10, f) != 10 || fwrite(dict, 1, len, f) != len ||
      fwrite(data, 1, bytes, f) != bytes) {
    fprintf(stderr, "%s: cannot write\n", path);
    if (f) fclose(f);
    return 1;
  }
  return fclose(f) == 0 ? 0 : 1;
}

#endif /* KILN_AOT_NPY_IO_H_ */
