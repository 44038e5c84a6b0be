#!/usr/bin/env python3
"""A small JAX training loop that serves the profiler over gRPC: the real peer of
`xlens capture` in crates/cli/tests/it/jax_interop.rs.

  jax_loop.py --port PORT [--seconds 30]

Calls jax.profiler.start_server(PORT), prints `ready PORT` on stdout once the first step
has run (so compilation is over), then trains an MLP with one
StepTraceAnnotation('train', step_num=i) per step and TraceAnnotation('forward_backward'),
until --seconds have passed.
"""
import argparse
import sys
import time


def main():
  p = argparse.ArgumentParser()
  p.add_argument('--port', type=int, required=True)
  p.add_argument('--seconds', type=float, default=30)
  a = p.parse_args()

  import jax
  import jax.numpy as jnp

  key = jax.random.PRNGKey(0)
  dims = [64, 64, 64, 10]
  params = []
  for i in range(len(dims) - 1):
    key, k = jax.random.split(key)
    params.append((jax.random.normal(k, (dims[i], dims[i + 1])) / dims[i] ** 0.5,
                   jnp.zeros((dims[i + 1],))))

  def loss_fn(params, x, y):
    for w, b in params[:-1]:
      x = jax.nn.gelu(x @ w + b)
    w, b = params[-1]
    logp = jax.nn.log_softmax(x @ w + b)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

  @jax.jit
  def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 1e-2 * g, params, grads), loss

  jax.profiler.start_server(a.port)
  t_end = time.time() + a.seconds
  i = 0
  while time.time() < t_end:
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      key, kx, ky = jax.random.split(key, 3)
      x = jax.random.normal(kx, (32, dims[0]))
      y = jax.random.randint(ky, (32,), 0, 10)
      with jax.profiler.TraceAnnotation('forward_backward'):
        params, loss = train_step(params, x, y)
        loss.block_until_ready()
    if i == 0:
      print(f'ready {a.port}', flush=True)
    i += 1
    time.sleep(0.002)
  print(f'ran {i} steps', flush=True)


if __name__ == '__main__':
  sys.exit(main())
