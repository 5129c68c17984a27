function price = w3_monte_carlo(M, reps)
% W3 of the benchmark harness: a European call by Monte Carlo, M paths of 256 geometric
% Brownian steps in single precision. The loop builds one graph; the random numbers are
% Tandem's Philox stream (rng(42)), so the value differs from MATLAB's generator's.
%   tandem run examples/w3_monte_carlo.m 1000000 5
if nargin < 1, M = 1e6; end
if nargin < 2, reps = 5; end
if ischar(M), M = str2double(M); end
if ischar(reps), reps = str2double(reps); end
T = 256; r = 0.05; sig = 0.2; dt = 1 / T;
rng(42);
times = zeros(1, reps);
for run = 0:reps
    t0 = tic;
    S = 100 * ones(M, 1, 'single');
    for i = 1:T
        S = S .* exp((r - sig^2 / 2) * dt + sig * sqrt(dt) * randn(M, 1, 'single'));
    end
    price = gather(exp(-r) * mean(max(S - 100, 0)));
    if run > 0, times(run) = toc(t0); end
end
fprintf('W3 M=%d: %.17g (best of %d runs: %.3f ms)\n', M, price, reps, min(times) * 1e3);
end
