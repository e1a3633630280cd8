// Command-line entry point: parses arguments, loads the config, runs the daemon, handles signals
// and exit codes. The only place that calls process.exit, besides version.ts's Node.js floor check,
// which must exit before the other imports load.
//   0 ok · 1 runtime failure · 64 usage error · 73 state directory in use by another relay
//   (EX_CANTCREAT) · 78 configuration error (EX_CONFIG)

// First: it exits with one line on a Node.js older than the floor, before any dependency loads.
import { buildCommit, VERSION } from './version.ts';
import { readFileSync } from 'node:fs';
import { isSea } from 'node:sea';
import { parseArgs } from 'node:util';
import { ConfigError, EX_CONFIG } from './config/errors.ts';
import { answerConfigLoad, LOAD_CONFIG_COMMAND, loadConfigInChild } from './config/load-child.ts';
import { MAX_CONFIG_BYTES, readBounded } from './config/read-bounded.ts';
import { markFile, watchConfigFile } from './config/watch.ts';
import type { Config } from './config/resolve.ts';
import { Relay } from './runtime/relay.ts';
import { EX_STATE_LOCKED } from './platform/state-lock.ts';
import { tuneMalloc } from './platform/native-addon.ts';
import { isRelayWorker, runWorker } from './runtime/worker-main.ts';
// The commands' own modules (check, send, rules push, tap, the emulator) are imported when their
// command runs: a daemon never loads them (undici alone is ~8 MB of resident memory).
import { probeReadyz, readyzUrl } from './cli/healthcheck.ts';
import { opsBase } from './cli/ops-url.ts';
import { createLogger } from './telemetry/log.ts';
import { commandHelp, commandOf, helpText, OPTIONS, unknownOption, usageProblem } from './cli/commands.ts';
import { describeFailure } from './cli/errors.ts';
import { forwarderLayout, type ForwarderLayout } from './config/forwarder-layout.ts';
import { layoutLines, logLayout, rootStart, type RootStart } from './runtime/root-start.ts';
import { extendedConfReport } from './cli/extended-conf-report.ts';

const EX_USAGE = 64;
const DEFAULT_CONFIG = process.env.INTAKE_RELAY_CONFIG ?? '/etc/intake-relay/intake-relay.yaml';

const HELP = helpText(DEFAULT_CONFIG);


async function main(argv: string[]): Promise<number> {
  // The daemon's configuration loader (config/load-child.ts): not a command for users.
  if (argv[0] === LOAD_CONFIG_COMMAND) return answerConfigLoad(argv.slice(1));
  let args;
  try {
    args = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    // The command, as far as a lenient reading finds it, for the suggestion.
    const { positionals } = parseArgs({ args: argv, allowPositionals: true, strict: false, options: OPTIONS });
    process.stderr.write(`${unknownOption((err as Error).message, positionals)}\n`);
    return EX_USAGE;
  }
  const { values, positionals } = args;
  if (values.version) {
    process.stdout.write(`intake-relay ${VERSION} (commit ${buildCommit()}, Node.js ${process.version}${isSea() ? ', single executable' : ''})\n`);
    return 0;
  }
  const command = positionals[0];
  if (!command) {
    process.stdout.write(`${HELP}\n`);
    return values.help ? 0 : EX_USAGE;
  }
  // `help CMD` and `CMD --help`: the command's own help.
  const helpFor = command === 'help' ? (positionals.length > 1 || !values.help ? positionals.slice(1) : ['help']) : values.help ? positionals : undefined;
  if (helpFor) {
    const c = helpFor.length > 0 ? commandOf(helpFor) : undefined;
    if (helpFor.length > 0 && !c) {
      process.stderr.write(`${usageProblem(helpFor, []) ?? ''}\n`);
      return EX_USAGE;
    }
    process.stdout.write(`${c ? commandHelp(c) : HELP}\n`);
    return 0;
  }
  const problem = usageProblem(positionals, Object.keys(values));
  if (problem) {
    process.stderr.write(`${problem}\n`);
    return EX_USAGE;
  }
  // In the container image: the official forwarder's mounts, when no configuration was given.
  const layout = forwarderLayout(process.env, values.config !== undefined);
  for (const [k, v] of Object.entries(layout?.env ?? {})) process.env[k] = v;
  const file = values.config ?? layout?.config ?? DEFAULT_CONFIG;
  switch (command) {
    case 'validate':
      return validate(file, values.print === true, layout);
    case 'run':
      return run(file, values['watch-config'] === true, layout);
    case 'healthcheck':
      return healthcheck(file);
    case 'emulate':
      return emulate(values);
    case 'check':
      return runCheck(file, values);
    case 'send':
      return runSend(file, values.intake, positionals.slice(1));
    case 'tap':
      return runTap(file, values);
    case 'top':
      return runTop(file, values);
    case 'rules':
      return rulesPush(file, values);
    case 'help':
    default:
      // usageProblem() knows every command: nothing else reaches here.
      process.stdout.write(`${HELP}\n`);
      return 0;
  }
}

/** `tap`: the running daemon's live view of events, until it ends or Ctrl-C. */
async function runTap(file: string, values: { intake?: string; input?: string; limit?: string; rate?: string; format?: string }): Promise<number> {
  const limit = Number(values.limit ?? 0);
  const rate = Number(values.rate ?? 100);
  const format = values.format ?? (process.stdout.isTTY ? 'text' : 'json');
  if (!Number.isInteger(limit) || limit < 0 || !Number.isInteger(rate) || rate < 1 || (format !== 'json' && format !== 'text')) {
    process.stderr.write('tap: --limit is a whole number >= 0, --rate a whole number >= 1, --format json or text.\n');
    return EX_USAGE;
  }
  const base = await runningOps(file, 'tap: metrics.enabled is false: the daemon serves the tap on its operations port.');
  if (typeof base === 'number') return base;
  const { tap } = await import('./cli/tap.ts');
  return untilSignal((signal) => tap(base, { intake: values.intake, input: values.input, limit, rate, format }, process.stdout, process.stderr, signal));
}

/** `top`: the running daemon, live on a terminal (until q), or one snapshot (--once, or piped). */
async function runTop(file: string, values: { once?: boolean; json?: boolean }): Promise<number> {
  if (values.json && !values.once && process.stdout.isTTY) {
    process.stderr.write('top: --json goes with --once (the live screen is text).\n');
    return EX_USAGE;
  }
  const base = await runningOps(file, 'top: metrics.enabled is false: the daemon serves its snapshot on its operations port.');
  if (typeof base === 'number') return base;
  const { live, once, Unreachable } = await import('./cli/top.ts');
  if (values.once || !process.stdout.isTTY || !process.stdin.isTTY) {
    try {
      await once(base, values.json === true, process.stdout);
      return 0;
    } catch (err) {
      if (!(err instanceof Unreachable)) throw err;
      process.stderr.write(`intake-relay top: ${err.message}\n`);
      return 1;
    }
  }
  await untilSignal((signal) => live(base, { stdin: process.stdin, stdout: process.stdout }, signal));
  return 0;
}

/** Where the daemon running `file` answers (its operations port), or the exit status after saying why not. */
async function runningOps(file: string, disabled: string): Promise<string | number> {
  const metrics = await metricsOrReport(file);
  if (!metrics) return EX_CONFIG;
  const base = opsBase({ metrics });
  if (base) return base;
  process.stderr.write(`${disabled}\n`);
  return 1;
}

/** Runs `work` with a signal that SIGINT or SIGTERM (Ctrl-C, a stop) aborts. */
async function untilSignal<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(stop.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

// The loader (and the schema library) is imported when a command needs it: the daemon's own
// modules do not load it (its worker threads never do; see runtime/worker-main.ts).

/** The configuration's metrics: settings only (where the running daemon answers), or undefined after printing the problems. */
async function metricsOrReport(file: string): Promise<Config['metrics'] | undefined> {
  const { loadMetricsSettings } = await import('./config/load.ts');
  try {
    return loadMetricsSettings(file);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return undefined;
    }
    throw err;
  }
}

/**
 * The configuration, or undefined after printing every problem to stderr. `inChild`: loaded by a
 * child process (the daemon: see config/load-child.ts).
 */
async function loadOrReport(file: string, inChild = false): Promise<Config | undefined> {
  try {
    if (inChild) {
      let bytes: Buffer | undefined;
      try {
        bytes = readBounded(file, MAX_CONFIG_BYTES);
      } catch {
        // The child reads it again and reports the problem in the loader's own words.
      }
      return await loadConfigInChild(file, bytes);
    }
    const { loadConfig } = await import('./config/load.ts');
    return loadConfig(file);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return undefined;
    }
    throw err;
  }
}

async function validate(file: string, print: boolean, layout: ForwarderLayout | undefined): Promise<number> {
  const config = await loadOrReport(file);
  if (!config) return EX_CONFIG;
  // Imported here: it loads the YAML library, which the daemon does not need.
  const { effectiveYaml, stateInUse, summarize } = await import('./cli/summary.ts');
  const state = stateInUse(config);
  if (print) process.stdout.write(effectiveYaml(config));
  else process.stdout.write(`${[...(layout ? layoutLines(layout) : []), summarize(config), ...state.lines, ...(layout?.extendedConf ? extendedConfReport(layout.extendedConf) : [])].join('\n')}\n`);
  if (state.conflict) {
    if (print) process.stderr.write(`${state.lines.filter((l) => l.startsWith('error:')).join('\n')}\n`);
    return EX_STATE_LOCKED;
  }
  return 0;
}

async function run(file: string, watchConfig: boolean, layout: ForwarderLayout | undefined): Promise<number> {
  // First: the C library's thresholds, before the daemon frees any large block (native-addon.ts).
  tuneMalloc();
  // A SIGHUP before the daemon runs (systemctl reload right after start) must not end the process
  // (its default action): it is remembered and applied once the daemon runs.
  let hupBeforeStart = false;
  const early = (): void => {
    hupBeforeStart = true;
  };
  process.on('SIGHUP', early);
  // Taken before the file is read: a change made while the daemon starts is seen by the watch.
  const mark = watchConfig ? markFile(file) : undefined;
  let start: RootStart;
  try {
    start = rootStart(layout);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return EX_CONFIG;
  }
  const config = await loadOrReport(file, true);
  if (!config) return EX_CONFIG;
  const log = createLogger(config.log_level);
  if (layout) logLayout(layout, log);
  if (!start.becomeUser(config, log)) {
    log.flush();
    return EX_CONFIG;
  }
  const daemon = new Relay(config, log);
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'Unexpected error: exiting so that the service manager restarts intake-relay.');
    log.flush();
    process.exit(70);
  });
  try {
    await daemon.start();
  } catch (err) {
    const code = (err as { code?: string }).code;
    log.error({ code }, (err as Error).message);
    log.flush();
    return code === 'ERELAY_STATE_LOCKED' ? EX_STATE_LOCKED : 1;
  }
  // SIGHUP (and, with --watch-config, a change of the file) reloads: an invalid file is refused
  // and the running configuration stays.
  // One load at a time, in the order asked: a later signal's file is applied last.
  let loading: Promise<void> = Promise.resolve();
  const reload = (why: string): void => {
    loading = loading.then(async () => {
      let next: Config;
      try {
        next = await loadConfigInChild(file);
      } catch (err) {
        if (err instanceof ConfigError) log.error({ trigger: why, problems: err.problems }, 'Reload refused: the new configuration is invalid; the running one stays.');
        else log.error({ trigger: why, problems: [(err as Error).message] }, 'Reload refused: the configuration could not be loaded; the running one stays.');
        daemon.reloadRefused();
        return;
      }
      log.info({ trigger: why }, 'Reloading the configuration.');
      await daemon.reload(next).catch((err: unknown) => log.error({ err }, 'Reload failed.'));
    });
  };
  process.on('SIGHUP', () => reload('SIGHUP'));
  process.off('SIGHUP', early);
  if (hupBeforeStart) reload('SIGHUP');
  const unwatch = mark ? watchConfigFile(file, mark, () => reload('file changed')) : undefined;
  const signalled = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  unwatch?.();
  // A second signal while draining exits at once.
  const force = (): void => {
    log.warn('Second signal: exiting without waiting for the queues to drain.');
    log.flush();
    process.exit(1);
  };
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  log.info({ signal: signalled }, 'Signal received.');
  await daemon.stop();
  log.flush();
  return 0;
}

async function runSend(file: string, intake: string | undefined, messages: string[]): Promise<number> {
  if (!intake || messages.length === 0) {
    process.stderr.write('Usage: intake-relay send -c FILE --intake NAME MESSAGE...\n');
    return EX_USAGE;
  }
  const config = await loadOrReport(file);
  if (!config) return EX_CONFIG;
  const { sendTest } = await import('./cli/send.ts');
  const r = await sendTest(config, intake, messages);
  process.stdout.write(`${r.ok ? 'ok' : 'FAILED'}: ${r.detail}\n`);
  return r.ok ? 0 : 1;
}

async function runCheck(file: string, values: { 'api-key'?: string; 'api-url'?: string }): Promise<number> {
  const config = await loadOrReport(file);
  if (!config) return EX_CONFIG;
  const apiKey = values['api-key'] ?? process.env.INTAKE_RELAY_API_KEY;
  const { check } = await import('./cli/check.ts');
  const reports = await check(config, apiKey || undefined, values['api-url']);
  let ok = true;
  for (const r of reports) {
    process.stdout.write(`${r.subject}\n`);
    for (const s of r.steps) {
      process.stdout.write(`  ${s.ok ? 'ok    ' : 'FAILED'} ${s.what}: ${s.detail}\n`);
      ok &&= s.ok;
    }
  }
  return ok ? 0 : 1;
}

async function rulesPush(file: string, values: { intake?: string; 'api-key'?: string; 'api-url'?: string; 'dry-run'?: boolean }): Promise<number> {
  const config = await loadOrReport(file);
  if (!config) return EX_CONFIG;
  const apiKey = values['api-key'] ?? process.env.INTAKE_RELAY_API_KEY ?? '';
  if (!apiKey && !values['dry-run']) {
    process.stderr.write('An API key is needed: --api-key KEY or $INTAKE_RELAY_API_KEY (with the permission SIC_WRITE_CONF_INTAKES).\n');
    return EX_USAGE;
  }
  let outcomes;
  try {
    const { pushRules } = await import('./cli/rules-push.ts');
    outcomes = await pushRules(config, apiKey, { intake: values.intake, apiUrl: values['api-url'], dryRun: values['dry-run'] });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return EX_USAGE;
  }
  if (outcomes.length === 0) process.stdout.write('No enabled filters to push.\n');
  for (const o of outcomes) process.stdout.write(`${o.ok ? 'ok    ' : 'FAILED'} intake "${o.intake}", rule "${o.rule}": ${o.detail}\n`);
  return outcomes.every((o) => o.ok) ? 0 : 1;
}

/** 0 or 1 only: the exit statuses a container HEALTHCHECK defines (a configuration error is 1). */
async function healthcheck(file: string): Promise<number> {
  const metrics = await metricsOrReport(file);
  if (!metrics) return 1;
  const url = readyzUrl({ metrics });
  if (!url) {
    process.stderr.write('not ready: metrics.enabled is false, so there is no /readyz to ask\n');
    return 1;
  }
  const r = await probeReadyz(url, 3_000);
  process.stdout.write(`${r.ok ? 'ready' : 'not ready'}: ${r.detail}\n`);
  return r.ok ? 0 : 1;
}

async function emulate(values: { port?: string; host?: string; 'cert-file'?: string; 'key-file'?: string; quiet?: boolean }): Promise<number> {
  const port = values.port === undefined ? 10514 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be a port number, not "${values.port}".\n`);
    return EX_USAGE;
  }
  if (!!values['cert-file'] !== !!values['key-file']) {
    process.stderr.write('--cert-file and --key-file go together.\n');
    return EX_USAGE;
  }
  const { IntakeEmulator, maskKey } = await import('./emulator/intake-emulator.ts');
  const emulator = new IntakeEmulator({
    host: values.host ?? '127.0.0.1',
    port,
    cert: values['cert-file'] ? readFileSync(values['cert-file']) : undefined,
    key: values['key-file'] ? readFileSync(values['key-file']) : undefined,
    onMessage: values.quiet
      ? (m) => { if (m.problems.length > 0) process.stdout.write(`REFUSED ${maskKey(m.raw)}\n  ${m.problems.join('; ')}\n`); }
      : (m) => process.stdout.write(m.problems.length === 0 ? `ok ${maskKey(m.raw)}\n` : `REFUSED ${maskKey(m.raw)}\n  ${m.problems.join('; ')}\n`),
    onProtocolError: (msg) => process.stdout.write(`PROTOCOL ERROR ${msg}\n`),
  });
  await emulator.start();
  process.stderr.write(`intake emulator listening on ${values.host ?? '127.0.0.1'}:${emulator.port} (TLS, octet-counted RFC 5424)\n`);
  if (!values['cert-file']) process.stderr.write(`its throwaway certificate (use as output.ca_file):\n${emulator.caPem}`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await emulator.stop();
  process.stderr.write(`received ${emulator.frames} frames, ${emulator.invalid} refused\n`);
  return 0;
}

// The single executable starts its worker threads (workers: N) from this same script.
if (isRelayWorker()) void runWorker();
else main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    // A routine failure (a port in use, a missing file) is one line; anything else is a bug.
    const line = describeFailure(err);
    process.stderr.write(line ? `intake-relay: ${line}\n` : `intake-relay: internal error: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(line ? 1 : 70);
  },
);
