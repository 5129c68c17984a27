#include "backends/cpu/epilogue.hpp"

#include <algorithm>

#include "backends/cpu/parallel.hpp"

namespace tandem::detail::cpu {

namespace {

// MATLAB's max of two values, as the elementwise kernels compute it: NaN loses.
template <class T>
T matlab_max(T a, T b) {
    return a != a ? b : b != b ? a : a > b ? a : b;
}

template <class T>
void apply(const Region& r, std::span<const Storage* const> inputs, T* d) {
    const Region::Epilogue& e = r.epilogue;
    const Shape& s = r.outputs[0].node->shape;
    const std::int64_t m = s[0], n = s[1];
    const T alpha = static_cast<T>(e.alpha), beta = static_cast<T>(e.beta);
    const T* c = e.has_c ? static_cast<const T*>(inputs[2]->data()) : nullptr;
    const T* bias = e.bias != Region::Epilogue::Bias::none ? static_cast<const T*>(inputs.back()->data()) : nullptr;
    auto columns = [&](std::int64_t j0, std::int64_t j1) {
        for (std::int64_t j = j0; j < j1; ++j)
            for (std::int64_t i = 0; i < m; ++i) {
                const std::int64_t k = i + m * j;
                T v = d[k];
                if (e.alpha != 1) v = v * alpha;
                if (c) v = v + beta * c[k];
                if (bias) v = v + bias[e.bias == Region::Epilogue::Bias::per_row ? i : j];
                if (e.relu) v = e.zero_first ? matlab_max(T(0), v) : matlab_max(v, T(0));
                d[k] = v;
            }
    };
    for_chunks(n, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(m, 1)), columns);
}

}  // namespace

void apply_epilogue(const Region& r, std::span<const Storage* const> inputs, Storage& out) {
    if (r.outputs[0].node->dtype == DType::f32) apply(r, inputs, static_cast<float*>(out.data()));
    else apply(r, inputs, static_cast<double*>(out.data()));
}

}  // namespace tandem::detail::cpu
