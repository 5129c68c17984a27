function r = w4_row_sums(n, reps)
% W4 of the benchmark harness: the sums of the rows of A .* B, then S' * S.
%   tandem run examples/w4_row_sums.m 2048 5
if nargin < 1, n = 2048; end
if nargin < 2, reps = 5; end
if ischar(n), n = str2double(n); end
if ischar(reps), reps = str2double(reps); end
k = reshape((0:n * n - 1)', n, n);
A = gather(weyl(k, 6700417) - 0.5);
B = gather(weyl(k, 5754853) - 0.5);
times = zeros(1, reps);
for run = 0:reps
    t0 = tic;
    S = sum(A .* B, 2);
    r = gather(S' * S);
    if run > 0, times(run) = toc(t0); end
end
fprintf('W4 n=%d: %.17g (best of %d runs: %.3f ms)\n', n, r, reps, min(times) * 1e3);
end

function u = weyl(k, p)
t = (k * p) * 2^-24;
u = t - floor(t);
end
