// One run of an async task at a time: a caller while a run is in flight gets that run's promise.
// The in-flight promise is stored before the task can finish, and cleared only by its own
// settling: a task that completes at once can never leave a stale promise behind (which would
// silently stop every later run, as `x ??= (async () => { ... finally { x = undefined } })()` does
// when the task returns before its first await).

export class SingleFlight {
  #running: Promise<void> | undefined;

  run(task: () => Promise<void> | void): Promise<void> {
    if (this.#running) return this.#running;
    const p: Promise<void> = Promise.resolve()
      .then(task)
      .finally(() => {
        if (this.#running === p) this.#running = undefined;
      });
    this.#running = p;
    return p;
  }

  /** A run that starts after this call: waits out the one in flight (which may have read older state). */
  async runFresh(task: () => Promise<void> | void): Promise<void> {
    if (this.#running) await this.#running;
    return this.run(task);
  }
}
