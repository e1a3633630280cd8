// The file input type (the reader is tail.ts): lines appended to files, an intake's own input only.
// Paths are made absolute here; the checkpoint file is named after the intake and the input.

import { hostname } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import type { InputDefinition } from '../../core/component.ts';
import type { InputTools } from '../../telemetry/tools.ts';
import { fileTelemetry } from './instruments.ts';
import { fileSafe } from '../../core/config-values.ts';
import type { FileInputConfig, ResolvedFileInput } from './config.ts';
import { holdConfigured } from './checkpoints.ts';
import { FileInput } from './tail.ts';

export const fileInput = {
  resolve(c, ctx) {
    if (c.multiline) {
      try {
        new RegExp(c.multiline.start_pattern);
      } catch (err) {
        ctx.problem(['multiline', 'start_pattern'], `not a valid regular expression: ${(err as Error).message}`);
      }
    }
    const label = c.name ?? `file:${c.paths[0]}`;
    return {
      ...c,
      paths: c.paths.map((p) => resolvePath(ctx.base, p)),
      exclude: c.exclude.map((p) => (p.includes('/') ? resolvePath(ctx.base, p) : p)),
      label,
    };
  },
  listening: () => undefined,
  feeds: () => false,
  router: () => undefined,
  impstats: () => undefined,
  senderKey: 'hostname',
  // Its lines keep in the file: it waits for room even under drop_newest.
  offerMode: 'wait',
  // Checkpoints: data_dir/files/<intake>--<input>.json, from the data_dir in force (a reload keeps it).
  // Every configured file input's checkpoints are its own, whichever input starts first.
  holdState: (dataDir, inputs) => holdConfigured(inputs.map((i) => checkpointFileOf(dataDir, i.intake, i.config.label))),
  create: (c, ctx) => new FileInput(c, ctx.inlet, checkpointFileOf(ctx.dataDir, ctx.inlet.owner, c.label), hostname(), fileTelemetry(ctx.tools.metrics, ctx.tools.log, ctx.tools.owner, ctx.tools.input, ctx.tools.senders)),
  describe: (c, where) => [
    `input ${c.label}: lines of ${c.paths.join(', ')}${c.exclude.length > 0 ? ` except ${c.exclude.join(', ')}` : ''}` +
      `, from the ${c.read_from} at first start, max ${c.max_line_bytes} bytes per line (${c.oversize})${c.multiline ? `, multiline from /${c.multiline.start_pattern}/` : ''}`,
    `  checkpoints in ${where.dataDir}`,
  ],
} satisfies InputDefinition<FileInputConfig, ResolvedFileInput, InputTools>;

/** The checkpoint file of file input `label` of intake `intake`. */
export function checkpointFileOf(dataDir: string, intake: string, label: string): string {
  return join(dataDir, 'files', `${fileSafe(intake)}--${fileSafe(label)}.json`);
}
