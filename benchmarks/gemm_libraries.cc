// Benchmark (not a test): single-precision GEMM GFLOP/s of the three CPU libraries Debian
// ships that Kiln could call for dots and convolutions — OpenBLAS (cblas_sgemm), oneDNN
// (dnnl_sgemm) and Eigen (a Map'ed matrix product) — on the same arrays in one run, at the
// shapes of the benchmark workloads, with 1 and with all threads. Results are checked
// against each other so a fast wrong answer does not count.
//
// Usage: gemm_libraries [runs]   (median of `runs` timed runs after one warm-up)
// Build: ninja -C build benchmarks/gemm_libraries  (needs libdnnl-dev and libeigen3-dev;
// benchmarks/install_peers.sh installs them)
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double MedianSeconds(int runs, const std::function<void()>& fn) {
  fn();  // warm-up: page faults, library initialization
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Shape {
  int m, k, n;
  const char* what;
};

float MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0, scale = 1e-6f;
  for (float v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst / scale;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Shape shapes[] = {
      {256, 784, 512, "relu(x@W+b) layer"},
      {256, 512, 10, "MLP output layer"},
      {512, 256, 784, "MLP weight gradient (x^T @ dy)"},
      {1024, 1024, 1024, "square"},
      {64, 240, 240, "LSTM gates (batch 64, 60 wide)"},
  };
  std::printf("GEMM GFLOP/s (median of %d), C[m,n] = A[m,k] @ B[k,n], row-major f32\n", runs);
  std::printf("%-34s %7s %9s %9s %9s  %s\n", "shape", "threads", "OpenBLAS", "oneDNN", "Eigen",
              "max rel diff vs OpenBLAS");
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    std::vector<float> c_blas(size_t(s.m) * s.n), c_dnnl(c_blas.size()), c_eigen(c_blas.size());
    const double flops = 2.0 * s.m * s.k * s.n;
    for (int threads : {1, all}) {
      openblas_set_num_threads(threads);
      // oneDNN's sgemm uses OpenMP threads.
      omp_set_num_threads(threads);
      Eigen::setNbThreads(threads);
      double t_blas = MedianSeconds(runs, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), s.k,
                    b.data(), s.n, 0.f, c_blas.data(), s.n);
      });
      double t_dnnl = MedianSeconds(runs, [&] {
        dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.n, 0.f, c_dnnl.data(),
                   s.n);
      });
      Eigen::Map<const RowMajor> ea(a.data(), s.m, s.k), eb(b.data(), s.k, s.n);
      Eigen::Map<RowMajor> ec(c_eigen.data(), s.m, s.n);
      double t_eigen = MedianSeconds(runs, [&] { ec.noalias() = ea * eb; });
      std::printf("%4dx%4dx%4d %-20s %7d %9.1f %9.1f %9.1f  oneDNN %.1e, Eigen %.1e\n", s.m, s.k,
                  s.n, s.what, threads, flops / t_blas * 1e-9, flops / t_dnnl * 1e-9,
                  flops / t_eigen * 1e-9, MaxRelDiff(c_dnnl, c_blas), MaxRelDiff(c_eigen, c_blas));
      if (MaxRelDiff(c_dnnl, c_blas) > 1e-4 || MaxRelDiff(c_eigen, c_blas) > 1e-4) {
        std::fprintf(stderr, "gemm_libraries: results disagree\n");
        return 1;
      }
    }
  }
  return 0;
}
