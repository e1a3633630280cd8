// Waiting for a condition that a component signals when it may have changed, bounded by a deadline
// (a stop waiting for the last answers, or for a session to close).

/** Resolves when `ready()` holds after a wake-up registered with `register`, or when `deadline` aborts. */
export function until(deadline: AbortSignal, register: (wake: () => void) => void, ready: () => boolean): Promise<void> {
  if (ready() || deadline.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      deadline.removeEventListener('abort', done);
      resolve();
    };
    register(() => {
      if (ready()) done();
    });
    deadline.addEventListener('abort', done, { once: true });
  });
}
