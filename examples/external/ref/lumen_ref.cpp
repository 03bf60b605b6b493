// lumen's reference functions, in plain C++ and double precision: what each kernel must
// compute, written without the kernels' tricks. The harness calls each with every tensor as
// doubles (inputs const, outputs to fill), then the shape symbols, then the parameters.
#include <cmath>

extern "C" int lumen_rms_norm_ref(const double* x, const double* weight, double* out, long long rows, long long cols, double eps) {
  for (long long r = 0; r < rows; r++) {
    double squares = 0.0;
    for (long long c = 0; c < cols; c++) squares += x[r * cols + c] * x[r * cols + c];
    const double scale = 1.0 / std::sqrt(squares / (double)cols + eps);
    for (long long c = 0; c < cols; c++) out[r * cols + c] = x[r * cols + c] * scale * weight[c];
  }
  return 0;
}

extern "C" int lumen_scale_add_ref(const double* a, const double* b, double* out, long long n, double alpha) {
  for (long long i = 0; i < n; i++) out[i] = a[i] * alpha + b[i];
  return 0;
}

extern "C" int lumen_row_dot_ref(const double* x, const double* y, double* out, long long rows, long long cols) {
  if (cols % 2 != 0) return 1;
  for (long long r = 0; r < rows; r++) {
    double sum = 0.0;
    for (long long c = 0; c < cols; c++) sum += x[r * cols + c] * y[r * cols + c];
    out[r] = sum;
  }
  return 0;
}
