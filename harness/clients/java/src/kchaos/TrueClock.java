package kchaos;

/**
 * The wall clock as it was when this JVM started, run on by the monotonic clock: what the history records.
 * A client_clock_skew moves this process's wall clock (libfaketime, the harness's clock file), so the
 * client's own timestamps and timeouts follow it; the history's times stay on the machine's clock, as every
 * other client's and the harness's do.
 */
final class TrueClock {
  private static final long BASE_MS = System.currentTimeMillis() - System.nanoTime() / 1_000_000;

  private TrueClock() {}

  static long nowMs() {
    return BASE_MS + System.nanoTime() / 1_000_000;
  }
}
