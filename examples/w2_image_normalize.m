function m = w2_image_normalize(B, reps)
% W2 of the benchmark harness: B 4K single-precision images, each normalised by its own mean and
% standard deviation, clipped and gamma-corrected; the mean of every pixel.
%   tandem run examples/w2_image_normalize.m 4 5
if nargin < 1, B = 4; end
if nargin < 2, reps = 5; end
if ischar(B), B = str2double(B); end
if ischar(reps), reps = str2double(reps); end
k = (0:2160 * 3840 * B - 1)';
imgs = gather(reshape(single(weyl(k, 8086861)), 2160, 3840, B));
times = zeros(1, reps);
for r = 0:reps
    t0 = tic;
    mu = mean(mean(imgs, 1), 2);
    d = imgs - mu;
    sigma = sqrt(mean(mean(d .^ 2, 1), 2));
    out = min(max(d ./ (sigma + 1e-6) * 0.25 + 0.5, 0) .^ 0.8, 1);
    m = gather(mean(out(:)));
    if r > 0, times(r) = toc(t0); end
end
fprintf('W2 B=%d: %.17g (best of %d runs: %.3f ms)\n', B, m, reps, min(times) * 1e3);
end

function u = weyl(k, p)
t = (k * p) * 2^-24;
u = t - floor(t);
end
