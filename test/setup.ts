// Before every test file: waits for a condition (vi.waitFor) give it 10 s unless they say
// otherwise, not vitest's 1 s. A condition that holds is met as soon as it holds, so a passing test
// takes no longer; on a slow, busy CI machine, a relay that needs 1.5 s to take 20,000 events no
// longer fails a test that was right.
import { vi } from 'vitest';

const waitFor = vi.waitFor.bind(vi);
vi.waitFor = ((callback: Parameters<typeof waitFor>[0], options?: Parameters<typeof waitFor>[1]) =>
  waitFor(callback, typeof options === 'number' ? options : { timeout: 10_000, ...options })) as typeof vi.waitFor;
