// The emulator's output takes the syslog output's defaults from a constant (the running relay does
// not load the schema library): they must be the schema's.
import { expect, it } from 'vitest';
import { SYSLOG_OUTPUT_DEFAULTS } from '../../src/outputs/syslog/definition.ts';
import { syslogOutputSchema } from '../../src/outputs/syslog/schema.ts';

it('SYSLOG_OUTPUT_DEFAULTS are the schema\'s defaults', () => {
  expect(SYSLOG_OUTPUT_DEFAULTS).toEqual(syslogOutputSchema.parse({ type: 'syslog' }));
});
