// YAML for a test relay: one intake forwarding to a loopback TLS intake that presents the committed
// test certificate.
import { TEST_KEY, TLS } from './relay.ts';

export interface TestConfig {
  intakePort: number;
  inputs?: string;
  output?: string;
  queue?: string;
  extra?: string;
  name?: string;
  resendWindowMs?: number;
}

export function relayYaml(c: TestConfig): string {
  return `log_level: debug
metrics: { enabled: false }
${c.extra ?? 'shutdown_timeout_ms: 1000'}
intakes:
  - name: ${c.name ?? 't'}
    intake_key: ${TEST_KEY}
    inputs:
${c.inputs ?? `      - { type: udp, address: 127.0.0.1, port: 0 }
      - { type: tcp, address: 127.0.0.1, port: 0 }`}
    output:
      type: syslog
      host: 127.0.0.1
      port: ${c.intakePort}
      server_name: localhost
      ca_file: ${TLS}ca.crt
      resend_window_ms: ${c.resendWindowMs ?? 200}
      backoff: { initial_ms: 50, max_ms: 200 }
${c.output ?? ''}
${c.queue ?? ''}
`;
}
