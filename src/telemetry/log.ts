// pino logger: JSON on stdout, intake keys redacted by path as a second line of defence (the code
// never logs them), and every known secret masked in each line as written (secret-mask.ts), the
// workers' lines included.

import { pino, type Logger } from 'pino';
import { isoUtc } from '../core/iso-time.ts';
import { secretMask } from './secret-mask.ts';

export type { Logger };

export const REDACT_PATHS = [
  'intake_key',
  'intakeKey',
  '*.intake_key',
  '*.intakeKey',
  'api_key',
  '*.api_key',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  // Node's HTTP parse errors carry the request's bytes.
  'err.rawPacket',
  '*.err.rawPacket',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'intake-relay' },
      // pino's isoTime calls toISOString (see core/iso-time.ts).
      timestamp: () => `,"time":"${isoUtc(Date.now())}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // A key quoted in an event or an error message, wherever it appears in the line.
      hooks: { streamWrite: (line) => secretMask.mask(line) },
    },
    // Synchronous: logs are lifecycle and rate-limited errors only, and none may be lost at exit.
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
