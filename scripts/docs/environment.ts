// Every environment variable intake-relay reads, with who reads it and what it does: the source of
// docs/reference/environment.md and of the man page's ENVIRONMENT. Hand-kept, because the code says
// that a variable is read, not what an operator should put in it; test/unit/docs-reference.test.ts
// scans src/ and the shipped configurations and fails when a variable read there is missing here,
// or when one listed here is read nowhere.
import { DEFAULT_DISK_SPACE } from '../../src/config/legacy-env.ts';
import { REGION_NAMES } from '../../src/config/regions.ts';

export interface EnvironmentVariable {
  /** Its spellings: more than one where the same setting has two (the lower-case proxy variables win). */
  readonly names: readonly string[];
  /** Who reads it: which commands, which configuration, or Node.js itself. */
  readonly readBy: string;
  /** What it does. Markdown with `code` spans only: the man page renders the same text. */
  readonly does: string;
  /** What holds when it is unset; '' when nothing does. */
  readonly default: string;
  /**
   * Read where the scan of src/ and the shipped configurations cannot see it (Node.js at start, a
   * configuration the operator writes): why it is listed anyway.
   */
  readonly outside?: string;
}

const FORWARDER = 'an `intakes.yaml` (the official forwarder\'s file, read as it is)';
const SHIPPED = '`config/intake-relay.yaml` (a checkout, the container image)';

export const ENVIRONMENT: readonly EnvironmentVariable[] = [
  {
    names: ['INTAKE_RELAY_CONFIG'],
    readBy: 'every command',
    does: 'The configuration file when `-c` is not given.',
    default: '`/etc/intake-relay/intake-relay.yaml`, or in the container image the official forwarder\'s `/intakes.yaml` when it is mounted (`INTAKE_RELAY_FORWARDER_LAYOUT`)',
  },
  {
    names: ['INTAKE_RELAY_FORWARDER_LAYOUT'],
    readBy: 'every command',
    does: '`auto` (the container image sets it): when neither `-c` nor `INTAKE_RELAY_CONFIG` names a configuration and `/intakes.yaml` exists, the official forwarder\'s layout is used: `/intakes.yaml` as the configuration, `/var/spool/rsyslog` (when mounted) for the disk queues (`STATE_DIRECTORY`), `/certs` for the TLS inputs (`CERTS_DIR`); the files of `/extended_conf` are named at start and translated by `validate` where they follow the documented recipe.',
    default: 'off',
  },
  {
    names: ['INTAKE_RELAY_USER'],
    readBy: '`run`',
    does: 'A numeric `uid:gid` (the container image sets `10001:10001`). Started as root, `run` gives that user its state directories (and only what it keeps in them), copies the TLS files of the forwarder\'s `/certs` it could not read into a private directory, then becomes that user before it opens anything. Started as any other user, it does nothing. Empty: stay root.',
    default: 'unset: the process keeps the user it was started as',
  },
  {
    names: ['INTAKE_RELAY_API_KEY'],
    readBy: '`check`, `rules push`',
    does: 'The platform API key when `--api-key` is not given: `check` then also asks `GET /v1/me`; `rules push` needs a key with the permission `SIC_WRITE_CONF_INTAKES`.',
    default: '',
  },
  {
    names: ['INTAKE_KEY'],
    readBy: `${SHIPPED}; the Debian package's \`/etc/intake-relay/intake-relay.yaml\``,
    does: 'The intake key of the shipped configurations\' one intake (`intake_key: ${INTAKE_KEY}`): keep it in the environment (the package\'s `intake-relay.env`), not in the file.',
    default: 'none (an intake without a key is an error, exit status 78, unless `INTAKE_RELAY_EMULATOR` says otherwise)',
  },
  {
    names: ['INTAKE_RELAY_EMULATOR'],
    readBy: 'the shipped configurations (`emulator.when`)',
    does: '`no_intake_key`: an intake without a key forwards to a local intake emulator, to try the relay out; `never`: an intake without a key is a configuration error. The container image and the systemd unit set `never`.',
    default: '`no_intake_key` in `config/intake-relay.yaml`, `never` in the Debian package\'s',
  },
  {
    names: ['REGION'],
    readBy: `${FORWARDER}; ${SHIPPED}`,
    does: `The region of the subscription, any case: ${REGION_NAMES.join(', ')}; with an \`intakes.yaml\` also \`OTHER\` with \`ENDPOINT\`. An unknown one is an error that names it.`,
    default: '`fra1`',
  },
  {
    names: ['LOG_LEVEL'],
    readBy: SHIPPED,
    does: 'The least severe level logged (`log_level`): fatal, error, warn, info, debug or trace.',
    default: '`info`',
  },
  {
    names: ['LISTEN_ADDRESS'],
    readBy: SHIPPED,
    does: 'The address of the UDP and TCP syslog inputs. The container image sets `0.0.0.0`.',
    default: '`127.0.0.1`',
  },
  {
    names: ['SYSLOG_PORT'],
    readBy: SHIPPED,
    does: 'The port of the UDP and TCP syslog inputs.',
    default: '`1514`',
  },
  {
    names: ['METRICS_ADDRESS'],
    readBy: `${SHIPPED}; ${FORWARDER}, for \`run\`, \`healthcheck\` and \`tap\` alike`,
    does: 'The address of the operations server (`/metrics`, `/healthz`, `/readyz`, `/status`, `/snapshot`, `/senders`, `/tap`). The container image sets `0.0.0.0`, so that probes reach it on the pod\'s address.',
    default: '`127.0.0.1`',
  },
  {
    names: ['METRICS_PORT'],
    readBy: `${SHIPPED}; ${FORWARDER}, for \`run\`, \`healthcheck\` and \`tap\` alike`,
    does: 'The port of the operations server.',
    default: '`9750`',
  },
  {
    names: ['ENDPOINT'],
    readBy: FORWARDER,
    does: 'The intake host, as `host`, `host:port` or `[IPv6]:port`; required with `REGION=OTHER`. Its port is the syslog port, or the RELP port with `RELP_OUTPUT`.',
    default: 'the region\'s intake host',
  },
  {
    names: ['RELP_OUTPUT'],
    readBy: FORWARDER,
    does: 'Any value that is set (even `false`, with a warning, as with the forwarder): every intake\'s output is RELP over TLS.',
    default: 'syslog over TLS',
  },
  {
    names: ['DISK_SPACE'],
    readBy: FORWARDER,
    does: 'The disk budget of the queues (`k`, `m`, `g`, `t` are KiB to TiB), split equally among the intakes that receive, each a disk queue in `$STATE_DIRECTORY/queues`; `0`: memory queues only. A directory that cannot be written is an error.',
    default: `\`${DEFAULT_DISK_SPACE}\``,
  },
  {
    names: ['MEMORY_MESSAGES'],
    readBy: FORWARDER,
    does: 'The messages the memory queues hold, divided among the intakes that receive (with disk queues, their memory stage); an entry\'s `queue_size` wins.',
    default: 'the queue\'s own defaults',
  },
  {
    names: ['CERTS_DIR'],
    readBy: FORWARDER,
    does: 'Where entries with `protocol: tls` find `server.crt` and `server.key` (or their `tls_cert_name` and `tls_key_name`, with `.crt` and `.key`).',
    default: '`/certs`',
  },
  {
    names: ['STATE_DIRECTORY'],
    readBy: 'every command that loads a configuration; set by systemd (`StateDirectory=`)',
    does: 'The default `data_dir` (the first directory, when systemd gives several): file input checkpoints and disk queues, each locked against a second relay. An `intakes.yaml`\'s disk queues go to its `queues` directory.',
    default: '`/var/lib/intake-relay`',
  },
  {
    names: ['CREDENTIALS_DIRECTORY'],
    readBy: 'a configuration that names it; set by systemd (`LoadCredential=`)',
    does: 'Where systemd puts the service\'s credentials, readable by its dynamic user: `intake_key_file: ${CREDENTIALS_DIRECTORY}/firewall-key`, or a TLS input\'s `key_file`.',
    default: '',
    outside: 'set by systemd for a configuration to name; no shipped configuration uses it outside a comment',
  },
  {
    names: ['https_proxy', 'HTTPS_PROXY'],
    readBy: 'HTTP outputs with `proxy: env` (the default)',
    does: 'The proxy to reach an `https://` intake through, as `http://[user:password@]host:port` (its password is masked in logs). The lower-case spelling wins.',
    default: 'none (a direct connection)',
  },
  {
    names: ['http_proxy', 'HTTP_PROXY'],
    readBy: 'HTTP outputs with `proxy: env` (the default)',
    does: 'The proxy for an `http://` endpoint (a test intake). The lower-case spelling wins.',
    default: 'none (a direct connection)',
  },
  {
    names: ['no_proxy', 'NO_PROXY'],
    readBy: 'HTTP outputs with `proxy: env` (the default)',
    does: 'Hosts reached directly despite a proxy, separated by commas: a name (its subdomains too), `host:port`, or `*` for all. The lower-case spelling wins.',
    default: '',
  },
  {
    names: ['INTAKE_RELAY_UDP_RECVMMSG'],
    readBy: 'UDP inputs',
    does: '`0`: receive with Node.js\' `dgram`, one call per datagram, instead of the native batched `recvmmsg` receive (to rule it out while troubleshooting; slower, and the kernel drops datagrams sooner).',
    default: 'the native receive, where it was built',
  },
  {
    names: ['TMPDIR'],
    readBy: 'the single executable',
    does: 'Where it writes the code of its threads (`workers`, `receive_threads`) and its native addon, to load them: it must be writable and allow executing.',
    default: '`/tmp`',
  },
  {
    names: ['NODE_EXTRA_CA_CERTS'],
    readBy: 'Node.js, at start (the single executable too)',
    does: 'A PEM file of CA certificates added to the system ones, for every output: a TLS-intercepting proxy, a test intake. An output\'s `ca_file` replaces them for that output instead.',
    default: '',
    outside: 'read by Node.js itself before any of the relay\'s code runs',
  },
  {
    names: ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_'],
    readBy: 'the C library (glibc), at start; `run` looks at them',
    does: 'The size from which an allocation is mapped on its own, and the free top past which a heap gives memory back. Unset, `run` fixes them at 1 MiB and 256 KiB (glibc otherwise raises both as large blocks are freed, and its heaps kept tens of MB under an HTTPS flood); either one set, both are left as glibc has them.',
    default: '1 MiB and 256 KiB, set by `run`',
  },
  {
    names: ['NODE_OPTIONS'],
    readBy: 'Node.js, when the relay runs from the npm package or a checkout',
    does: 'Node.js options. The single executable ignores it (it is meant for other Node.js programs on the host): give it a flag on its command line instead, `intake-relay --node-options=--max-old-space-size=512 run ...`.',
    default: '',
    outside: 'read by Node.js itself before any of the relay\'s code runs',
  },
];
