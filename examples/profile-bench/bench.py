#!/usr/bin/env python3
"""Reference benchmark for `pal-kube profile bench`: time training iterations
of a torchvision model on the one GPU the pod sees, and print the result
line PAL collects.

pal-kube profile bench sets NVIDIA_VISIBLE_DEVICES to one device, so inside the
container that GPU is cuda:0. The environment it passes:

  PAL_BENCH_MODEL       torchvision model name (resnet50, vgg19, ...); the
                        same name goes into the measurement file, so pick
                        names pal's model table knows
  PAL_BENCH_ITERATIONS  timed iterations (default 100)
  PAL_BENCH_GPU_INDEX, PAL_BENCH_NODE, PAL_BENCH_REPETITION, PAL_BENCH_RUN
                        where and which run this is (only logged here)

Optional knobs of this script (not set by pal): PAL_BENCH_WARMUP (untimed
iterations first, default 10) and PAL_BENCH_BATCH (batch size, default 32).

The result line goes to stdout and to /dev/termination-log, where the
kubelet keeps it in the pod's status after the container ends:

  PAL_RESULT iter_time_s=0.1234 sm_clock_mhz=1410 power_w=250 temp_c=60 gpu_uuid=GPU-...
"""

import os
import subprocess
import sys
import time


def fail(msg):
    print("bench.py: " + msg, file=sys.stderr)
    sys.exit(1)


def gpu_telemetry():
    """UUID, SM clock (MHz), power (W) and temperature (C) of the visible
    GPU from nvidia-smi, as result-line fields; fields nvidia-smi does not
    report are left out (the result line makes them optional)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "-i", "0", "--query-gpu=uuid,clocks.sm,power.draw,temperature.gpu",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        print("bench.py: no telemetry: %s" % e, file=sys.stderr)
        return []
    vals = [v.strip() for v in out.strip().splitlines()[0].split(",")]
    fields = []
    for key, v in zip(["gpu_uuid", "sm_clock_mhz", "power_w", "temp_c"], vals):
        if key == "gpu_uuid":
            if v.startswith("GPU-"):
                fields.append("gpu_uuid=" + v)
            continue
        try:
            fields.append("%s=%g" % (key, float(v)))
        except ValueError:
            pass  # "[N/A]" on boards that do not report it
    return fields


def main():
    import torch
    import torchvision

    name = os.environ.get("PAL_BENCH_MODEL", "")
    iters = int(os.environ.get("PAL_BENCH_ITERATIONS", "100"))
    warmup = int(os.environ.get("PAL_BENCH_WARMUP", "10"))
    batch = int(os.environ.get("PAL_BENCH_BATCH", "32"))
    if iters < 1 or warmup < 0 or batch < 1:
        fail("PAL_BENCH_ITERATIONS, PAL_BENCH_WARMUP and PAL_BENCH_BATCH must be positive")
    ctor = getattr(torchvision.models, name.lower(), None)
    if not name or not callable(ctor):
        fail("PAL_BENCH_MODEL=%r is not a torchvision model" % name)
    if not torch.cuda.is_available():
        fail("no GPU visible (NVIDIA_VISIBLE_DEVICES=%r)" % os.environ.get("NVIDIA_VISIBLE_DEVICES"))
    print("bench.py: %s on node %s GPU %s, repetition %s, %d iterations of batch %d" % (
        name, os.environ.get("PAL_BENCH_NODE"), os.environ.get("PAL_BENCH_GPU_INDEX"),
        os.environ.get("PAL_BENCH_REPETITION"), iters, batch), flush=True)

    torch.manual_seed(0)  # the same weights and inputs on every GPU
    dev = torch.device("cuda:0")
    model = ctor(weights=None).to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize(dev)
    start = time.perf_counter()
    for _ in range(iters):
        step()
    torch.cuda.synchronize(dev)
    iter_time = (time.perf_counter() - start) / iters

    # Read right after the timed loop, while the GPU is still at the
    # clock and temperature it ran at.
    line = " ".join(["PAL_RESULT", "iter_time_s=%.6g" % iter_time] + gpu_telemetry())
    print(line, flush=True)
    try:
        with open("/dev/termination-log", "w") as f:
            f.write(line + "\n")
    except OSError:
        pass  # not in a pod: stdout has it


if __name__ == "__main__":
    main()
