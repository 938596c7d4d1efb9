"""Timing of GPU work for the device scripts: CUDA events around repeated
calls after warm-up, the median of several blocks each long enough that
launch gaps between blocks do not count."""
import torch


def bench_ms(fn, target_ms=10.0, blocks=5):
    """Median milliseconds of one call of fn over `blocks` timed blocks of
    about `target_ms` each, after three warm-up calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    reps = max(1, min(2000, int(target_ms / max(start.elapsed_time(stop), 1e-3))))
    per_call = []
    for _ in range(blocks):
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        per_call.append(start.elapsed_time(stop) / reps)
    per_call.sort()
    return per_call[len(per_call) // 2]
