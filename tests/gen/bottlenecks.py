#!/usr/bin/env python3
"""Real JAX (CPU) training profiles whose bottleneck is known by construction.

They are test fixtures for step-time "advice" (input-bound / host-bound / compute-bound). Each
scenario runs a few untraced warm-up steps (so compilation stays out of the trace), then traces
--steps (default 10) training steps, each wrapped in
jax.profiler.StepTraceAnnotation('train', step_num=i) (the step marker XProf and xlens group steps
by), and ends every step with a host sync so the step's span covers its work. Python tracing is
off (python_tracer_level 0) to keep the files small. It writes the standard layout
<logdir>/plugins/profile/<scenario>/<hostname>.xplane.pb (plus JAX's <hostname>.trace.json.gz,
which the fixtures do not keep).

Scenarios
---------
input_bound
    Every step first calls a slow Python data loader: ~30 ms of time.sleep (a stand-in for
    reading/decoding from slow storage) plus a little numpy augmentation. The loader runs inside
    jax.profiler.TraceAnnotation('IteratorGetNext'). XProf classifies a host event as
    HOST_WAIT_INPUT ("Input" in the step breakdown) when its name starts with 'IteratorGetNext'
    (case-insensitive; xprof/utils/event_span.cc ClassifyCpuEvent, mirrored by xlens's
    crates/analysis/src/base/steps/step_db.rs classify_cpu). That is the TensorFlow tf.data op name;
    JAX has no input op of its own, but a TraceAnnotation of that name is an ordinary host
    TraceMe, nested in the step marker on the same thread, so it is grouped into the step and
    classified as input. (A nested 'slow_loader' annotation keeps a descriptive name; the parent's
    higher-priority Input type wins for the overlapping time.) The train step is a small jitted
    MLP (width 64, batch 32: well under 1 ms), so input should be far above 50% of step time.

host_bound
    Every step dispatches --ops (default 200) tiny, separate, un-fused jitted ops one at a time
    from Python on an 8x8 array (a cycle of add/mul/tanh/sin/...), then block_until_ready. Each op
    does almost no arithmetic; the time is Python + JAX dispatch overhead on the host (argument
    handling, executable lookup, PjRt enqueue) repeated 200 times. On CPU the "device" is the host,
    so this shows as host time: short per-dispatch runtime events with Python time between them
    (which XProf leaves uncovered, i.e. "All others"), and many tiny XLA executions.

compute_bound
    Every step is one jitted function (forward, backward and SGD update of a width-1024, depth-3
    MLP at batch 256, ~5 GFLOP) called on a batch already on the device (made once, before
    tracing), then block_until_ready on the loss. There is no input work and a single dispatch per
    step, so the step is XLA CPU compute (the dot / ynn_fusion ops). Caveat, found when the
    fixtures were made: JAX's default CPU async dispatch is on, so the Python thread enqueues the
    executable and then blocks in block_until_ready with no trace event of its own, while the
    ops run on XLA's worker threads ('tf_XLAPjRtCpuClient', 'tf_XLAEigen') that XProf links to
    the step only in some steps. On a CPU-only profile (XProf has no separate device on CPU) much
    of this compute therefore lands in "All others", not "Host compute"; the compute shows in the
    op self times (they add up to about the step time).

compute_bound_sync
    The same work as compute_bound with jax.config 'jax_cpu_enable_async_dispatch' set to False,
    so the executable runs inside the dispatch call on the Python thread, nested in the step
    marker: the compute is "Host compute". With compute_bound it shows how one workload's
    breakdown depends on the dispatch mode.

collective_bound
    Several CPU devices in one process (XLA_FLAGS --xla_force_host_platform_device_count,
    --devices, default 4) and one SPMD step per training step (shard_map under jit): a
    multiply-add on each device's shard of a large vector (--elems float32 per device, default
    4 Mi) and a psum of the whole shard across the devices. XLA's CPU runtime runs the
    all-reduce (an HLO `all-reduce`, named `psum_invariant.*` after the JAX primitive) on host
    threads, where it moves the data and waits for the other devices at its rendezvous, while
    the arithmetic around it is one multiply-add per element: the step is communication.

idle
    Every step waits --idle_sleep_ms (default 30) in a plain time.sleep, in no annotation of its
    own (a stand-in for waiting on something the profile does not show: a lock, another process,
    a barrier outside JAX), then runs one tiny jitted op: neither the ops nor the host's traced
    work fill the step.

Regenerate (from the repository root; takes well under a minute, JAX 0.10.2 CPU, xprof 2.24.2):

  JAX_PLATFORMS=cpu .ci-venv/bin/python tests/gen/bottlenecks.py \\
      --logdir fixtures/logdir_bottlenecks --scenario all
  rm fixtures/logdir_bottlenecks/plugins/profile/*/*.trace.json.gz
  gzip -9 fixtures/logdir_bottlenecks/plugins/profile/*/*.xplane.pb

Then check each with:

  target/profiling/xlens tool overview_page \\
      fixtures/logdir_bottlenecks/plugins/profile/<scenario>/<host>.xplane.pb.gz

Timings depend on the machine and its load; the fixtures' figures are in
fixtures/logdir_bottlenecks/README.md.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time

SCENARIOS = ('input_bound', 'host_bound', 'compute_bound', 'compute_bound_sync',
             'collective_bound', 'idle')


def build_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument('--logdir', required=True)
  p.add_argument('--scenario', choices=SCENARIOS + ('all',), default='all')
  p.add_argument('--steps', type=int, default=10)
  p.add_argument('--warmup', type=int, default=2, help='untraced warm-up steps (compilation)')
  p.add_argument('--input_sleep_ms', type=float, default=30.0,
                 help='input_bound: sleep in the data loader per step')
  p.add_argument('--ops', type=int, default=200, help='host_bound: tiny ops dispatched per step')
  p.add_argument('--width', type=int, default=1024, help='compute_bound: MLP width')
  p.add_argument('--depth', type=int, default=3, help='compute_bound: hidden layers')
  p.add_argument('--batch', type=int, default=256, help='compute_bound: batch size')
  p.add_argument('--devices', type=int, default=4,
                 help='collective_bound: CPU devices (XLA host platform device count)')
  p.add_argument('--elems', type=int, default=1 << 22,
                 help='collective_bound: float32 elements all-reduced per device per step')
  p.add_argument('--idle_sleep_ms', type=float, default=30.0,
                 help='idle: untraced wait per step')
  p.add_argument('--host_tracer_level', type=int, default=2)
  p.add_argument('--seed', type=int, default=0)
  return p.parse_args(argv)


def make_mlp(jax, jnp, np, key, width, depth, n_in, n_out):
  dims = [n_in] + [width] * depth + [n_out]
  params = []
  for i in range(len(dims) - 1):
    key, k = jax.random.split(key)
    params.append({'w': jax.random.normal(k, (dims[i], dims[i + 1])) / np.sqrt(dims[i]),
                   'b': jnp.zeros((dims[i + 1],))})
  return params


def mlp_train_step(jax, jnp):
  """One jitted function: forward, backward and SGD update."""

  def apply(params, x):
    for layer in params[:-1]:
      x = jax.nn.gelu(x @ layer['w'] + layer['b'])
    return x @ params[-1]['w'] + params[-1]['b']

  def loss_fn(params, x, y):
    logp = jax.nn.log_softmax(apply(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

  @jax.jit
  def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)
    return params, loss

  return train_step


def scenario_input_bound(a, jax, jnp, np):
  rng = np.random.default_rng(a.seed)
  width, batch = 64, 32
  params = make_mlp(jax, jnp, np, jax.random.PRNGKey(a.seed), width, 2, width, 10)
  train_step = mlp_train_step(jax, jnp)

  def slow_loader():
    # Stand-in for a slow input pipeline: waiting on storage, then decoding/augmenting on host.
    time.sleep(a.input_sleep_ms / 1000.0)
    x = rng.standard_normal((batch, width), dtype=np.float32)
    for _ in range(20):  # cheap numpy "augmentation"
      x = np.tanh(x * 1.01 + 0.01)
    y = rng.integers(0, 10, size=(batch,))
    return x, y

  state = {'params': params}

  def step(i):
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      with jax.profiler.TraceAnnotation('IteratorGetNext'):
        with jax.profiler.TraceAnnotation('slow_loader'):
          x, y = slow_loader()
        x, y = jax.device_put(x), jax.device_put(y)
      with jax.profiler.TraceAnnotation('train_step'):
        state['params'], loss = train_step(state['params'], x, y)
      return float(loss)  # host sync: ends the step

  return step


def scenario_host_bound(a, jax, jnp, np):
  # Separate jitted functions (no fusion across them): one XLA executable per call.
  unary = [jax.jit(f) for f in (lambda x: x + 1.0, lambda x: x * 0.5, jnp.tanh, jnp.sin,
                                 lambda x: x - 0.25, jnp.cos, lambda x: x * x, jnp.abs)]
  x0 = jax.device_put(np.ones((8, 8), dtype=np.float32))

  def step(i):
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      x = x0
      for k in range(a.ops):
        x = unary[k % len(unary)](x)
      x.block_until_ready()  # host sync: ends the step
      return float(x[0, 0])

  return step


def scenario_compute_bound(a, jax, jnp, np):
  rng = np.random.default_rng(a.seed)
  params = make_mlp(jax, jnp, np, jax.random.PRNGKey(a.seed), a.width, a.depth, a.width, 10)
  train_step = mlp_train_step(jax, jnp)
  # Data made once and put on the device before tracing: no input work inside the steps.
  x = jax.device_put(rng.standard_normal((a.batch, a.width), dtype=np.float32))
  y = jax.device_put(rng.integers(0, 10, size=(a.batch,)))
  state = {'params': params}

  def step(i):
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      state['params'], loss = train_step(state['params'], x, y)
      loss.block_until_ready()  # host sync: ends the step
      return float(loss)

  return step


def scenario_collective_bound(a, jax, jnp, np):
  # One SPMD step per training step over the --devices CPU devices (shard_map under jit): a
  # multiply-add on each device's shard of a large vector, then a psum of the whole shard
  # across devices. The all-reduce moves (and rendezvouses on) --elems floats per device while
  # the arithmetic around it is one multiply-add per element, so the step is communication, not
  # compute.
  from jax.sharding import NamedSharding, PartitionSpec as P
  n = jax.device_count()
  if n < 2:
    raise SystemExit(f'collective_bound needs at least 2 devices, got {n}')
  mesh = jax.make_mesh((n,), ('i',))
  train_step = jax.jit(jax.shard_map(
      lambda v: v - 1e-6 * jax.lax.psum(v * 0.5 + 1.0, 'i'),
      mesh=mesh, in_specs=P('i'), out_specs=P('i')))
  rng = np.random.default_rng(a.seed)
  state = {'v': jax.device_put(rng.standard_normal((n * a.elems,), dtype=np.float32),
                               NamedSharding(mesh, P('i')))}

  def step(i):
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      state['v'] = train_step(state['v'])
      state['v'].block_until_ready()  # host sync: ends the step
      return float(state['v'].addressable_shards[0].data[0])

  return step


def scenario_idle(a, jax, jnp, np):
  tiny = jax.jit(lambda x: x * 2.0 + 1.0)
  x0 = jax.device_put(np.ones((8, 8), dtype=np.float32))

  def step(i):
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
      time.sleep(a.idle_sleep_ms / 1000.0)  # untraced wait
      return float(tiny(x0)[0, 0])  # host sync: ends the step

  return step


def run_scenario(a, name):
  if name == 'collective_bound':
    # Several CPU devices in one process, so XLA runs real all-reduces between them. Read when
    # the CPU client is created: set before JAX is imported.
    os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') +
                               f' --xla_force_host_platform_device_count={a.devices}').strip()
  import numpy as np
  import jax
  import jax.numpy as jnp

  # compute_bound_sync: the same work as compute_bound with CPU async dispatch off. The flag is
  # read when the CPU client is created, so it must be set before JAX's first use (main() runs
  # every scenario in a fresh process).
  jax.config.update('jax_cpu_enable_async_dispatch', name != 'compute_bound_sync')
  step = {'input_bound': scenario_input_bound, 'host_bound': scenario_host_bound,
          'compute_bound': scenario_compute_bound,
          'compute_bound_sync': scenario_compute_bound,
          'collective_bound': scenario_collective_bound,
          'idle': scenario_idle}[name](a, jax, jnp, np)
  for i in range(a.warmup):
    step(-1 - i)

  opts = jax.profiler.ProfileOptions()
  opts.host_tracer_level = a.host_tracer_level
  opts.python_tracer_level = 0
  tmp_logdir = a.logdir + '.tmp_' + str(os.getpid())
  t0 = time.time()
  jax.profiler.start_trace(tmp_logdir, profiler_options=opts)
  last = None
  for i in range(a.steps):
    last = step(i)
  jax.profiler.stop_trace()
  t1 = time.time()

  src_root = os.path.join(tmp_logdir, 'plugins', 'profile')
  (src_run,) = os.listdir(src_root)
  dst_root = os.path.join(a.logdir, 'plugins', 'profile')
  os.makedirs(dst_root, exist_ok=True)
  dst = os.path.join(dst_root, name)
  if os.path.exists(dst):
    shutil.rmtree(dst)
  shutil.move(os.path.join(src_root, src_run), dst)
  shutil.rmtree(tmp_logdir)
  for f in sorted(os.listdir(dst)):
    print(f'{os.path.join(dst, f)}\t{os.path.getsize(os.path.join(dst, f))} bytes')
  print(f'jax {jax.__version__} host={socket.gethostname()} scenario={name} steps={a.steps} '
        f'last={last:.4f} traced_wall={t1 - t0:.2f}s', file=sys.stderr)


def main(argv=None):
  a = build_args(argv)
  if a.scenario != 'all':
    run_scenario(a, a.scenario)
    return
  # One fresh process per scenario: JAX state (CPU client options, caches, threads) of one
  # scenario must not leak into the next.
  argv = list(sys.argv[1:] if argv is None else argv)
  i = argv.index('--scenario') if '--scenario' in argv else None
  if i is not None:
    del argv[i:i + 2]
  argv = [x for x in argv if not x.startswith('--scenario=')]
  for name in SCENARIOS:
    subprocess.run([sys.executable, os.path.abspath(__file__), *argv, '--scenario', name],
                   check=True)


if __name__ == '__main__':
  main()
