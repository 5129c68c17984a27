#include "matlab/linear_solve.hpp"

#include <cmath>
#include <vector>

#include "matlab/errors.hpp"
#include "matlab/operators.hpp"

extern "C" {
// LAPACK through OpenBLAS (Fortran calling convention).
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb, int* info);
void dgels_(const char* trans, const int* m, const int* n, const int* nrhs, double* a, const int* lda, double* b,
            const int* ldb, double* work, const int* lwork, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void dgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* info);
void dgecon_(const char* norm, const int* n, const double* a, const int* lda, const double* anorm, double* rcond,
             double* work, int* iwork, int* info);
}

namespace tandem::matlab {

using tandem::DType;

tandem::Array eye(tandem::Runtime& rt, std::int64_t m, std::int64_t n, DType t) {
    if (m == 0 || n == 0) return rt.zeros({m, n}, t);
    tandem::Array i = tandem::transpose(rt.colon(1.0, static_cast<double>(m)));
    tandem::Array j = rt.colon(1.0, static_cast<double>(n));
    tandem::Array e = tandem::eq(i, j);
    return t == DType::logical ? e : tandem::astype(e, t);
}
tandem::Array eye(tandem::Runtime& rt, std::int64_t n, DType t) { return eye(rt, n, n, t); }

namespace {

void warn(const std::string& text) { std::fprintf(stderr, "Warning: %s\n", text.c_str()); }

double one_norm(const std::vector<double>& a, int n) {
    double best = 0;
    for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int i = 0; i < n; ++i) s += std::fabs(a[static_cast<std::size_t>(i + n * j)]);
        best = std::max(best, s);
    }
    return best;
}

}  // namespace

Value solve(tandem::Runtime& rt, const Value& A, const Value& B, const char* op) {
    const auto da = dims(A), db = dims(B);
    if (da.size() != 2 || db.size() != 2)
        throw MatlabError("Arguments must be 2-D.", "MATLAB:mldivide:inputsMustBe2D", op);
    if (da[0] != db[0])
        throw MatlabError("Matrix dimensions must agree.", "MATLAB:dimagree", op);
    const DType t = result_type(A, B);
    const int m = static_cast<int>(da[0]), n = static_cast<int>(da[1]), k = static_cast<int>(db[1]);
    std::vector<double> a = to_doubles(rt, A, op), b = to_doubles(rt, B, op);
    if (m == 0 || n == 0 || k == 0) {
        tandem::Array z = rt.zeros({n, k}, t);
        return from_array(z);
    }
    int info = 0;
    std::vector<double> x;
    if (m == n) {
        std::vector<double> lu = a;
        std::vector<int> ipiv(static_cast<std::size_t>(n));
        const double anorm = one_norm(a, n);
        dgesv_(&n, &k, a.data(), &m, ipiv.data(), b.data(), &m, &info);
        if (info < 0) throw MatlabError("internal: dgesv rejected argument " + std::to_string(-info), "MATLAB:lapack", op);
        if (info > 0) {
            warn("Matrix is singular to working precision.");
        } else {
            double rcond = 0;
            std::vector<double> work(static_cast<std::size_t>(4 * n));
            std::vector<int> iwork(static_cast<std::size_t>(n));
            int info2 = 0;
            dgecon_("1", &n, a.data(), &n, &anorm, &rcond, work.data(), iwork.data(), &info2);
            if (rcond < std::numeric_limits<double>::epsilon())
                warn("Matrix is close to singular or badly scaled. Results may be inaccurate. RCOND = " + std::to_string(rcond) + ".");
        }
        if (info > 0) {
            // MATLAB gives Inf (or NaN) where the division by a zero pivot happens.
            for (double& v : b) v = std::numeric_limits<double>::infinity();
        }
        x = std::move(b);
    } else {
        // Least squares (m > n) or the minimum-norm-ish solution (m < n): dgels.
        const int ldb = std::max(m, n);
        std::vector<double> bb(static_cast<std::size_t>(ldb * k), 0.0);
        for (int j = 0; j < k; ++j)
            for (int i = 0; i < m; ++i) bb[static_cast<std::size_t>(i + ldb * j)] = b[static_cast<std::size_t>(i + m * j)];
        int lwork = -1;
        double query = 0;
        dgels_("N", &m, &n, &k, a.data(), &m, bb.data(), &ldb, &query, &lwork, &info);
        lwork = static_cast<int>(query);
        std::vector<double> work(static_cast<std::size_t>(std::max(1, lwork)));
        dgels_("N", &m, &n, &k, a.data(), &m, bb.data(), &ldb, work.data(), &lwork, &info);
        if (info > 0) warn("Rank deficient, rank < " + std::to_string(std::min(m, n)) + ".");
        x.resize(static_cast<std::size_t>(n * k));
        for (int j = 0; j < k; ++j)
            for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i + n * j)] = bb[static_cast<std::size_t>(i + ldb * j)];
    }
    tandem::Array r = rt.adopt(std::move(x), tandem::Shape{n, k});
    return from_array(t == DType::f32 ? tandem::single(r) : r);
}

double matrix_2norm(tandem::Runtime& rt, const Value& A) {
    const auto d = dims(A);
    if (d.size() != 2) throw MatlabError("Input must be 2-D.", "MATLAB:norm:inputMustBe2D", "norm");
    const int m = static_cast<int>(d[0]), n = static_cast<int>(d[1]);
    if (m == 0 || n == 0) return 0.0;
    std::vector<double> a = to_doubles(rt, A, "norm");
    for (double x : a)
        if (std::isnan(x)) return x;
    std::vector<double> sv(static_cast<std::size_t>(std::min(m, n)));
    int lwork = -1, info = 0, one = 1;
    double query = 0, dummy = 0;
    dgesvd_("N", "N", &m, &n, a.data(), &m, sv.data(), &dummy, &one, &dummy, &one, &query, &lwork, &info);
    lwork = static_cast<int>(query);
    std::vector<double> work(static_cast<std::size_t>(std::max(1, lwork)));
    dgesvd_("N", "N", &m, &n, a.data(), &m, sv.data(), &dummy, &one, &dummy, &one, work.data(), &lwork, &info);
    if (info != 0) throw MatlabError("The singular value decomposition did not converge.", "MATLAB:svd:NoConvergence", "norm");
    return sv.front();
}

double determinant(tandem::Runtime& rt, const Value& A) {
    const auto d = dims(A);
    if (d.size() != 2 || d[0] != d[1]) throw MatlabError("Matrix must be square.", "MATLAB:square", "det");
    const int n = static_cast<int>(d[0]);
    if (n == 0) return 1.0;
    std::vector<double> a = to_doubles(rt, A, "det");
    std::vector<int> ipiv(static_cast<std::size_t>(n));
    int info = 0;
    dgetrf_(&n, &n, a.data(), &n, ipiv.data(), &info);
    double det = 1.0;
    for (int i = 0; i < n; ++i) {
        det *= a[static_cast<std::size_t>(i + n * i)];
        if (ipiv[static_cast<std::size_t>(i)] != i + 1) det = -det;
    }
    return det;
}

}  // namespace tandem::matlab
