// A configuration that cannot be used: every problem, one line each, and the exit status it gets.
// Apart from the loader so that what only reports it (main.ts) does not load the schema library.

/** sysexits EX_CONFIG. */
export const EX_CONFIG = 78;

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(file: string, problems: readonly string[]) {
    // Every problem starts with the file (and its position): one problem is one line.
    super(problems.length === 1 ? problems[0]! : `${file}: ${problems.length} configuration problems:\n  ${problems.join('\n  ')}`);
    this.problems = problems;
    this.name = 'ConfigError';
  }
}
