function lambda = w5_power_iteration(n, d, reps)
% W5 of the benchmark harness: the covariance of n samples of d features and its largest
% eigenvalue's share of the total variance by 50 steps of power iteration.
%   tandem run examples/w5_power_iteration.m 65536 128 5
if nargin < 1, n = 65536; end
if nargin < 2, d = 128; end
if nargin < 3, reps = 5; end
if ischar(n), n = str2double(n); end
if ischar(d), d = str2double(d); end
if ischar(reps), reps = str2double(reps); end
i = (0:n-1)';
j = 0:d-1;
k = reshape((0:n * d - 1)', n, d);
X = gather((weyl(i, 7368787) - 0.5) .* weyl(j, 3276509) + (weyl(k, 8086861) - 0.5) / 4);
times = zeros(1, reps);
for run = 0:reps
    t0 = tic;
    Xc = X - mean(X);
    G = Xc' * Xc / (n - 1);
    v = ones(d, 1) / sqrt(d);
    for it = 1:50
        Gv = G * v;
        v = Gv / norm(Gv);
    end
    lambda = gather((v' * G * v) / sum(var(X)));
    if run > 0, times(run) = toc(t0); end
end
fprintf('W5 %dx%d: %.17g (best of %d runs: %.3f ms)\n', n, d, lambda, reps, min(times) * 1e3);
end

function u = weyl(k, p)
t = (k * p) * 2^-24;
u = t - floor(t);
end
