function s = w1_transcendental(n, reps)
% W1 of the benchmark harness: a chain of transcendental functions and a sum over n doubles.
%   tandem run examples/w1_transcendental.m 1000000 5
% The inputs are Weyl sequences every peer computes exactly (bench/workloads.cpp explains them);
% gather() brings a value to the host: each timed run ends when its sum is there.
if nargin < 1, n = 1e6; end
if nargin < 2, reps = 5; end
if ischar(n), n = str2double(n); end
if ischar(reps), reps = str2double(reps); end
P = [6700417 5754853 7368787 4875851];
k = (0:n-1)';
x = gather(2 * (weyl(k, P(1)) + weyl(k, P(2)) + weyl(k, P(3)) + weyl(k, P(4)) - 2));
times = zeros(1, reps);
for r = 0:reps
    t0 = tic;
    y = sin(x) .* x + 0.5;
    z = exp(-y .^ 2) ./ (1 + abs(x));
    s = gather(sum(z));
    if r > 0, times(r) = toc(t0); end
end
fprintf('W1 n=%d: %.17g (best of %d runs: %.3f ms)\n', n, s, reps, min(times) * 1e3);
end

function u = weyl(k, p)
t = (k * p) * 2^-24;
u = t - floor(t);
end
