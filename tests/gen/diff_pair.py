#!/usr/bin/env python3
"""Two real JAX (CPU) profiles of one training step before and after a small change, for the
op matching of `xlens diff` (fixtures/diff_pair/).

base
    A jitted MLP train step (forward, backward, SGD update; width --width, depth --depth, batch
    --batch) on a batch already on the device, --steps traced steps after 2 untraced warm-up
    steps, each in jax.profiler.StepTraceAnnotation('train', step_num=i).
new
    The same step with one change in front: the input batch is standardised inside the jitted
    step ((x - mean) / (std + 1e-6) over the batch) before the MLP. XLA compiles the whole step
    again: the new reductions and elementwise ops get instructions of their own, which moves
    the numbers in the names of the instructions after them, while the MLP's own ops (the
    layers' dots, the activations, the SGD updates of the weights) compute exactly what they
    computed before.

Regenerate (from the repository root; JAX 0.10.2 CPU):

  JAX_PLATFORMS=cpu .ci-venv/bin/python tests/gen/diff_pair.py --logdir fixtures/diff_pair
  rm fixtures/diff_pair/plugins/profile/*/*.trace.json.gz
  gzip -9 fixtures/diff_pair/plugins/profile/*/*.xplane.pb
"""

import argparse
import os
import shutil
import subprocess
import sys


def build_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument('--logdir', required=True)
  p.add_argument('--variant', choices=('base', 'new', 'both'), default='both')
  p.add_argument('--steps', type=int, default=6)
  p.add_argument('--width', type=int, default=256)
  p.add_argument('--depth', type=int, default=2)
  p.add_argument('--batch', type=int, default=64)
  p.add_argument('--seed', type=int, default=0)
  return p.parse_args(argv)


def run(a):
  import numpy as np
  import jax
  import jax.numpy as jnp

  dims = [a.width] + [a.width] * a.depth + [10]
  key = jax.random.PRNGKey(a.seed)
  params = []
  for i in range(len(dims) - 1):
    key, k = jax.random.split(key)
    params.append({'w': jax.random.normal(k, (dims[i], dims[i + 1])) / np.sqrt(dims[i]),
                   'b': jnp.zeros((dims[i + 1],))})
  standardise = a.variant == 'new'

  def apply(params, x):
    if standardise:
      x = (x - jnp.mean(x, axis=0)) / (jnp.std(x, axis=0) + 1e-6)
    for layer in params[:-1]:
      x = jax.nn.gelu(x @ layer['w'] + layer['b'])
    return x @ params[-1]['w'] + params[-1]['b']

  def loss_fn(params, x, y):
    logp = jax.nn.log_softmax(apply(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

  @jax.jit
  def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads), loss

  rng = np.random.default_rng(a.seed)
  x = jax.device_put(rng.standard_normal((a.batch, a.width), dtype=np.float32))
  y = jax.device_put(rng.integers(0, 10, size=(a.batch,)))
  state = {'params': params}

  def step(i):
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      state['params'], loss = train_step(state['params'], x, y)
      return float(loss)  # host sync: ends the step

  for i in range(2):
    step(-1 - i)
  opts = jax.profiler.ProfileOptions()
  opts.host_tracer_level = 2
  opts.python_tracer_level = 0
  tmp = a.logdir + '.tmp_' + str(os.getpid())
  jax.profiler.start_trace(tmp, profiler_options=opts)
  for i in range(a.steps):
    step(i)
  jax.profiler.stop_trace()
  src_root = os.path.join(tmp, 'plugins', 'profile')
  (src_run,) = os.listdir(src_root)
  dst_root = os.path.join(a.logdir, 'plugins', 'profile')
  os.makedirs(dst_root, exist_ok=True)
  dst = os.path.join(dst_root, a.variant)
  if os.path.exists(dst):
    shutil.rmtree(dst)
  shutil.move(os.path.join(src_root, src_run), dst)
  shutil.rmtree(tmp)
  print(f'jax {jax.__version__} variant={a.variant} -> {dst}', file=sys.stderr)


def main():
  a = build_args()
  if a.variant != 'both':
    run(a)
    return
  # One fresh process per variant: nothing compiled for one is reused by the other.
  argv = [x for x in sys.argv[1:] if not x.startswith('--variant')]
  for v in ('base', 'new'):
    subprocess.run([sys.executable, os.path.abspath(__file__), *argv, '--variant', v], check=True)


if __name__ == '__main__':
  main()
