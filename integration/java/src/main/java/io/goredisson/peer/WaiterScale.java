package io.goredisson.peer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * Many waiters at once, each on a lock of its own name, through Redisson's async API (one
 * owner id per lock, as many threads would be): what Redisson's default subscription pools
 * (subscriptionsPerConnection × subscriptionConnectionPoolSize) do with them.
 *
 * Commands, on the peer's "scale" type: {@code scale.start PREFIX N} starts lockAsync on
 * PREFIX0 … PREFIX(N-1) and returns; {@code scale.result TIMEOUT_MS} waits for them and
 * returns {@code acquired=A,failed=F,pending=P,last=EPOCH_MS,error=CLASS:MESSAGE}; {@code
 * scale.release} unlocks what was acquired and returns how many.
 */
final class WaiterScale {
    private final RedissonClient redisson;
    private final List<RLock> locks = new ArrayList<>();
    private final List<CompletableFuture<Void>> futures = new ArrayList<>();
    private final AtomicLong last = new AtomicLong();
    private final AtomicReference<Throwable> firstError = new AtomicReference<>();

    WaiterScale(RedissonClient redisson) {
        this.redisson = redisson;
    }

    String run(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "start": return start(a[0], Integer.parseInt(a[1]));
            case "result": return result(Long.parseLong(a[0]));
            case "release": return release();
            default: throw new IllegalArgumentException("unknown scale command: " + cmd);
        }
    }

    private String start(String prefix, int n) {
        locks.clear();
        futures.clear();
        last.set(0);
        firstError.set(null);
        for (int i = 0; i < n; i++) {
            RLock l = redisson.getLock(prefix + i);
            locks.add(l);
            long owner = i + 1;
            CompletableFuture<Void> f = l.lockAsync(owner).toCompletableFuture();
            f.whenComplete((v, err) -> {
                if (err != null) {
                    firstError.compareAndSet(null, err);
                } else {
                    last.accumulateAndGet(System.currentTimeMillis(), Math::max);
                }
            });
            futures.add(f);
        }
        return "started";
    }

    private String result(long timeoutMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        int acquired = 0, failed = 0, pending = 0;
        for (CompletableFuture<Void> f : futures) {
            long left = deadline - System.nanoTime();
            try {
                f.get(Math.max(left, 0), TimeUnit.NANOSECONDS);
                acquired++;
            } catch (java.util.concurrent.TimeoutException e) {
                pending++;
            } catch (Exception e) {
                failed++;
            }
        }
        Throwable err = firstError.get();
        String error = err == null ? "-" : (err.getClass().getSimpleName() + ":" + String.valueOf(err.getMessage())).replaceAll("\\s+", "_");
        return "acquired=" + acquired + ",failed=" + failed + ",pending=" + pending + ",last=" + last.get() + ",error=" + error;
    }

    private String release() throws Exception {
        int released = 0;
        for (int i = 0; i < futures.size(); i++) {
            CompletableFuture<Void> f = futures.get(i);
            if (f.isDone() && !f.isCompletedExceptionally()) {
                locks.get(i).unlockAsync(i + 1).toCompletableFuture().get(10, TimeUnit.SECONDS);
                released++;
            } else {
                f.cancel(true);
            }
        }
        return String.valueOf(released);
    }
}
