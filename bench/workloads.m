% workloads(w, a, b, warmup, reps, steps, iters): the GNU Octave peer of tandem-workloads, the
% benchmark issue's five whole programs, W6 (a heat stencil) and W7 (softmax of each row) in plain
% MATLAB code. One call
% runs one program at one size and prints one JSON object per line ("context", then "result" or
% "error"), as bench/workloads.cpp does; read its header for the programs and the input formula
% (the same bits here: u(k, p) = t - floor(t), t = (k * p) * 2^-24, exact in double).
%
%   octave-cli --no-gui --quiet --eval "addpath('bench'); workloads(5, 65536, 128, 1, 5, 256, 50)"
%
% a is n (W1, W4, W6), B (W2), M (W3) or N (W5, W7); b is D (W5, W7, else ignored); W6 runs 100 steps
% whatever `steps` is (W3's). Timing: `warmup` untimed runs, then `reps` timed ones, each the wall
% time (tic/toc) of the whole program.
function workloads(w, a, b, warmup, reps, steps, iters)
  if nargin < 4, warmup = 1; end
  if nargin < 5, reps = 5; end
  if nargin < 6, steps = 256; end
  if nargin < 7, iters = 50; end
  printf('{"kind": "context", "system": "octave", "octave": "%s", "blas": "%s"}\n', version(), blas_name());
  try
    t0 = tic;
    [inputs, program] = make_workload(w, a, b, steps, iters);
    setup_ms = toc(t0) * 1e3;
    times = zeros(1, warmup + reps);
    for r = 1:(warmup + reps)
      t0 = tic;
      value = program(inputs{:});
      times(r) = toc(t0) * 1e3;
    end
  catch err
    printf('{"kind": "error", "system": "octave", "workload": %d, "message": "%s"}\n', w, json_text(err.message));
    exit(1);
  end
  size_text = sprintf('%d', a);
  if w == 5 || w == 7, size_text = sprintf('%dx%d', a, b); end
  printf(['{"kind": "result", "system": "octave", "workload": %d, "size": "%s", "steps": %d, "iters": %d, ' ...
          '"setup_ms": %.6g, "value": %.17g, "warmup_ms": [%s], "samples_ms": [%s]}\n'], ...
         w, size_text, steps, iters, setup_ms, value, join_numbers(times(1:warmup)), join_numbers(times(warmup+1:end)));
end

function [inputs, program] = make_workload(w, a, b, steps, iters)
  P = [6700417 5754853 7368787 4875851 8086861 3276509];
  switch w
    case 1
      x = filled(a, @(k) 2 * (weyl(k, P(1)) + weyl(k, P(2)) + weyl(k, P(3)) + weyl(k, P(4)) - 2));
      inputs = {x}; program = @w1;
    case 2
      imgs = reshape(single(filled(2160 * 3840 * a, @(k) weyl(k, P(5)))), 2160, 3840, a);
      inputs = {imgs}; program = @w2;
    case 3
      randn('state', 42);
      inputs = {a, steps}; program = @w3;
    case 4
      A = reshape(filled(a * a, @(k) weyl(k, P(1)) - 0.5), a, a);
      B = reshape(filled(a * a, @(k) weyl(k, P(2)) - 0.5), a, a);
      inputs = {A, B}; program = @w4;
    case 5
      % column by column: the whole index matrix at once would need several times X's memory
      X = zeros(a, b);
      i = (0:a-1)';
      for j = 0:b-1
        X(:, j+1) = (weyl(i, P(3)) - 0.5) * weyl(j, P(6)) + (weyl(i + a * j, P(5)) - 0.5) / 4;
      end
      inputs = {X, iters}; program = @w5;
    case 6
      u = reshape(filled(a * a, @(k) weyl(k, P(6))), a, a);
      inputs = {u}; program = @w6;
    case 7
      X = reshape(filled(a * b, @(k) 8 * weyl(k, P(4)) - 4), a, b);
      inputs = {X}; program = @w7;
    otherwise
      error('no workload %d', w);
  end
end

function s = w1(x)
  y = sin(x) .* x + 0.5;
  z = exp(-y.^2) ./ (1 + abs(x));
  s = sum(z);
end

function m = w2(imgs)
  % mean(imgs, [1 2]) is MATLAB R2018b's; Octave 7 reduces one dimension at a time
  mu = mean(mean(imgs, 1), 2);
  sigma = sqrt(mean(mean((imgs - mu).^2, 1), 2));
  out = min(max((imgs - mu) ./ (sigma + 1e-6) * 0.25 + 0.5, 0) .^ 0.8, 1);
  % Octave 7 sums singles in single, one after another: mean(out(:)) drifts by 0.5% over 8.3M
  % elements (and mean(x, 'double') converts only that result), so the sum runs in double
  m = sum(out(:), 'double') / numel(out);
end

function price = w3(M, T)
  r = 0.05; sig = 0.2; dt = 1 / T;
  S = 100 * ones(M, 1, 'single');
  % randn(M, 1, 'single') of Octave 7.3 is biased (mean -0.004, sd 0.995 over 1e7 draws, seen
  % here), which moves the price 13 standard errors below Black-Scholes at M = 65536: the draws
  % are made in double and rounded, as single(randn(...)) in MATLAB would be
  for t = 1:T
    S = S .* exp((r - sig^2/2)*dt + sig*sqrt(dt)*single(randn(M, 1)));
  end
  price = exp(-r) * mean(max(S - 100, 0));
end

function r = w4(A, B)
  S = sum(A .* B, 2);
  r = S' * S;
end

function ev = w5(X, iters)
  n = rows(X);
  Xc = X - mean(X);
  G = Xc' * Xc / (n - 1);
  v = ones(columns(X), 1) / sqrt(columns(X));
  for it = 1:iters
    v = G*v / norm(G*v);
  end
  ev = v' * G * v / sum(var(X));
end

function s = w6(u)
  stencil_steps = 100;  % fixed (the steps argument is W3's)
  for t = 1:stencil_steps
    u = u + 0.1 * (circshift(u, 1, 1) + circshift(u, -1, 1) + circshift(u, 1, 2) + circshift(u, -1, 2) - 4 * u);
  end
  s = sum(u(:) .^ 2);
end

function s = w7(X)
  E = exp(X - max(X, [], 2));
  P = E ./ sum(E, 2);
  s = sum(P(:) .* X(:));
end

% ---- inputs and output ----

function u = weyl(k, p)
  t = (k * p) * 2^-24;
  u = t - floor(t);
end

% f over 0..n-1 in chunks (a 1e8-element index vector and its temporaries would need ~5 GB)
function x = filled(n, f)
  x = zeros(n, 1);
  chunk = 2^22;
  for lo = 0:chunk:n-1
    hi = min(n, lo + chunk);
    x(lo+1:hi) = f((lo:hi-1)');
  end
end

function s = join_numbers(v)
  s = strjoin(arrayfun(@(t) sprintf('%.6g', t), v, 'UniformOutput', false), ', ');
end

function s = json_text(s)
  s = strrep(strrep(strrep(s, '\', '\\'), '"', '\"'), sprintf('\n'), ' ');
end

function s = blas_name()
  s = 'unknown';
  try
    s = json_text(version('-blas'));
  catch
  end
end
