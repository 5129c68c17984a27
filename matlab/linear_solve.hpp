// Dense linear algebra the interpreter needs beyond Tandem's ops: A \ B (LAPACK on the CPU:
// dgesv for square A, dgels least squares otherwise), the identity, inv and det.
#pragma once

#include "matlab/value.hpp"

namespace tandem::matlab {

/// A \ B; `op` names the operator or function in errors.
Value solve(tandem::Runtime& rt, const Value& A, const Value& B, const char* op);
/// The n x n identity (m x n with two extents) of type t.
tandem::Array eye(tandem::Runtime& rt, std::int64_t n, tandem::DType t = tandem::DType::f64);
tandem::Array eye(tandem::Runtime& rt, std::int64_t m, std::int64_t n, tandem::DType t);
/// norm(A) of a matrix: its largest singular value (LAPACK dgesvd).
double matrix_2norm(tandem::Runtime& rt, const Value& A);
/// det(A) of a square matrix (LU).
double determinant(tandem::Runtime& rt, const Value& A);

}  // namespace tandem::matlab
