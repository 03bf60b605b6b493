# The bus alone, by PyTorch: 4 GiB device to page-locked host memory and back, and the same
# into pageable memory, each three times; then one core's memcpy and 8 threads' of 4 GiB.
import time, torch, numpy as np, threading
n = 4 << 30
dev = torch.empty(n, dtype=torch.uint8, device="cuda"); dev.fill_(7); torch.cuda.synchronize()
pinned = torch.empty(n, dtype=torch.uint8, pin_memory=True)
pageable = torch.empty(n, dtype=torch.uint8); pageable.fill_(1)
def timed(what, f):
    for _ in range(3):
        torch.cuda.synchronize(); t = time.perf_counter(); f(); torch.cuda.synchronize(); s = time.perf_counter() - t
        print(f"{what}: {s:.3f} s, {n / s / 1e9:.1f} GB/s", flush=True)
timed("device to pinned", lambda: pinned.copy_(dev))
timed("pinned to device", lambda: dev.copy_(pinned))
timed("device to pageable", lambda: pageable.copy_(dev))
timed("pageable to device", lambda: dev.copy_(pageable))
a = pinned.numpy(); b = pageable.numpy()
timed("memcpy pinned to pageable, 1 thread", lambda: np.copyto(b, a))
def threads(k):
    step = n // k
    ts = [threading.Thread(target=np.copyto, args=(b[i*step:(i+1)*step], a[i*step:(i+1)*step])) for i in range(k)]
    [t.start() for t in ts]; [t.join() for t in ts]
timed("memcpy pinned to pageable, 8 threads", lambda: threads(8))
