function matlab_gpuarray(n, reps)
% gpuArray under automatic placement: the same chain of elementwise statements and a reduction
% on n elements, on plain arrays (placement decides) and on gpuArrays (kept on the device),
% best of reps runs after one. Prints the values (the same bits) and the times.
%   TANDEM_PLACEMENT=auto tandem run bench/matlab_gpuarray.m 1e6 9
if nargin < 1, n = 1e6; end
if nargin < 2, reps = 9; end
if ischar(n), n = str2double(n); end
if ischar(reps), reps = str2double(reps); end
x0 = linspace(-2, 2, n)';
for variant = 1:2
    times = zeros(1, reps);
    for run = 0:reps
        t0 = tic;
        if variant == 2, x = gpuArray(x0); else, x = x0; end
        y = exp(-x .^ 2) .* cos(3 * x);
        z = y ./ (1 + abs(x));
        s = gather(sum(z) / n);
        if run > 0, times(run) = toc(t0); end
    end
    names = {'plain', 'gpuArray'};
    fprintf('%s n=%d: %.17g (best of %d runs: %.3f ms)\n', names{variant}, n, s, reps, min(times) * 1e3);
end
end
