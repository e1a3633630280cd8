// The file input's configuration: its schema and its resolved shape.

import { z } from 'zod';
import { INTAKE_MAX_EVENT_BYTES, listener, positive, printable } from '../../core/config-parts.ts';

export const fileInputSchema = z.strictObject({
  type: z.literal('file').describe('Lines appended to files: globs, rotation (rename and copytruncate), checkpoints in data_dir.'),
  name: listener.name.describe('Name of this input in metrics and logs. Default: "file:<first path>".'),
  paths: z.array(z.string().min(1)).min(1, 'needs at least one path or glob')
    .describe('Files to read: paths or globs (*, ?, [abc], {a,b}, ** for any depth). Relative paths are relative to the configuration file.'),
  exclude: z.array(z.string().min(1)).default([]).describe('Globs of files not to read, even when paths match them (e.g. "/var/log/*.gz").'),
  read_from: z.enum(['end', 'beginning']).default('end')
    .describe('Where to start in files that exist at the very first start (no checkpoints yet). Files that appear later are read from new_files_from.'),
  new_files_from: z.enum(['beginning', 'end']).default('beginning')
    .describe('Where to start in a file first seen after the first start (created while running or while stopped).'),
  syslog_header: z.enum(['ignore', 'keep']).default('ignore')
    .describe('ignore: each line is the message, with the header fields below; keep: a line that starts with a syslog header (<PRI>) keeps its own fields.'),
  hostname: printable(255).optional().describe('HOSTNAME of the lines. Default: this machine\'s host name.'),
  app_name: printable(48).optional().describe('APP-NAME of the lines. Default: the file\'s base name (cut to 48 characters).'),
  facility: z.int().min(0).max(23).default(1).describe('Facility of the lines (1 = user).'),
  severity: z.int().min(0).max(7).default(5).describe('Severity of the lines (5 = notice).'),
  encoding: z.enum(['utf-8', 'latin1']).default('utf-8').describe('Character encoding of the files; latin1 (ISO-8859-1) is converted to UTF-8. Invalid UTF-8 is repaired (counted), never forwarded.'),
  max_line_bytes: z.int().min(64).max(INTAKE_MAX_EVENT_BYTES).default(INTAKE_MAX_EVENT_BYTES)
    .describe('Longest line forwarded as one event, in bytes (the intake refuses events over 250 KiB).'),
  oversize: z.enum(['split', 'drop']).default('split')
    .describe('A longer line is split into several events (counted as split) or dropped (counted as too_large).'),
  partial_line_timeout_ms: z.int().min(0).default(5_000)
    .describe('A last line without its newline is forwarded after waiting this long for the rest (0 = wait for the newline forever).'),
  multiline: z
    .strictObject({
      start_pattern: z.string().min(1).describe('Regular expression matching the first line of an event (e.g. "^\\d{4}-\\d{2}-\\d{2}"); other lines join the event before them.'),
      timeout_ms: positive.default(1_000).describe('An event is forwarded once no line was added to it for this long.'),
      max_lines: positive.default(500).describe('Most lines in one event; more start a new event.'),
    })
    .optional()
    .describe('Group lines into one event (stack traces): an event starts at a line matching start_pattern.'),
  poll_interval_ms: positive.default(250).describe('How often files are checked for new lines when inotify does not wake the reader first.'),
  glob_interval_ms: positive.default(1_000).describe('How often paths are matched again to find new, rotated and deleted files.'),
  rotate_wait_ms: positive.default(10_000)
    .describe('A rotated (renamed) or deleted file is read to its end, then kept open this long after it last grew (writers that reopen late), then closed.'),
  max_open_files: z.int().min(1).max(65_536).default(512)
    .describe('Files kept open at once; beyond it, the least recently active are closed and reopened when they grow.'),
  forget_after_ms: positive.default(7 * 24 * 3_600_000).describe('Checkpoints of files gone for this long are forgotten (7 days by default).'),
});

export type FileInputConfig = z.infer<typeof fileInputSchema>;
/** A file input; `paths` and `exclude` made absolute (exclude patterns without "/" match base names). */
export type ResolvedFileInput = FileInputConfig & {
  readonly label: string;
};

