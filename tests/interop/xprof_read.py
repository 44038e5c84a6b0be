#!/usr/bin/env python3
"""Reads one .xplane.pb with XProf's own converter (the `xprof` package) and prints what it
shows as JSON: trace_viewer complete-event counts by name, thread names, and the step numbers
of overview_page's step-time table. Used by crates/profiler/tests/it/xprof_interop.rs.

  xprof_read.py FILE
"""
import collections
import json
import logging
import os
import sys


def main():
  path = sys.argv[1]
  logging.disable(logging.WARNING)
  from xprof.convert import raw_to_tool_data as conv
  out = {}
  data, _ = conv.xspace_to_tool_data([path], 'trace_viewer', {'trace_viewer_options': {}})
  tv = json.loads(data)
  events = tv.get('traceEvents', [])
  out['trace_counts'] = dict(collections.Counter(e.get('name') for e in events if e.get('ph') == 'X'))
  out['threads'] = sorted(e['args']['name'] for e in events
                          if e.get('ph') == 'M' and e.get('name') == 'thread_name')
  data, _ = conv.xspace_to_tool_data([path], 'overview_page', {})
  ov = json.loads(data)
  steps = []
  for table in ov:
    ids = [c.get('id') for c in table.get('cols', [])]
    if 'stepnum' in ids:
      steps = [r['c'][0]['v'] for r in table.get('rows', [])]
  out['overview_steps'] = steps
  out['overview_bytes'] = len(data)
  sys.stdout.write(json.dumps(out))
  sys.stdout.flush()
  # XProf's native threads can hang the interpreter's exit.
  os._exit(0)


if __name__ == '__main__':
  main()
