// The RELP output's configuration: region defaults (the documented intake host, port 11514), the
// endpoints overrides, the names `check` tries, and its bad values.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load.ts';
import { relpOutput, type ResolvedRelpOutput } from '../../src/outputs/relp/definition.ts';
import { TLS } from '../helpers/relay.ts';

const KEY = 'AbCdEf0123456789AbCdEf0123456789';
const yaml = (output: string, top = '') => `${top}intakes:\n  - name: a\n    intake_key: ${KEY}\n    output: ${output}\n`;
const relpOf = (text: string): ResolvedRelpOutput => parseConfig(text, 'relay.yaml', {}).intakes[0]!.output as ResolvedRelpOutput;

describe('RELP output configuration', () => {
  it('defaults to the region\'s documented intake host on 11514, over TLS, window 128; check tries the forwarder\'s relp. name too', () => {
    const o = relpOf(yaml('{ type: relp }', 'region: fra2\n'));
    expect([o.host, o.port, o.tls, o.window]).toEqual(['intake.fra2.sekoia.io', 11514, true, 128]);
    expect(relpOutput.checkTargets(o)).toEqual(['intake.fra2.sekoia.io', 'relp.intake.fra2.sekoia.io']);
    expect(relpOutput.describe(o)).toBe('RELP over TLS to intake.fra2.sekoia.io:11514, CA system store, window 128, timestamp received');
  });

  it('follows endpoints.relp_host / relp_port (or syslog_host), and a host set by hand is the only one checked', () => {
    const viaRelp = relpOf(yaml('{ type: relp }', 'endpoints: { relp_host: relp.example.net, relp_port: 2514 }\n'));
    expect([viaRelp.host, viaRelp.port]).toEqual(['relp.example.net', 2514]);
    expect(relpOutput.checkTargets(viaRelp)).toEqual(['relp.example.net']);
    const viaSyslog = relpOf(yaml('{ type: relp }', 'endpoints: { syslog_host: proxy.example.net }\n'));
    expect([viaSyslog.host, viaSyslog.port]).toEqual(['proxy.example.net', 11514]);
    expect(relpOutput.checkTargets(relpOf(yaml('{ type: relp, host: intake.sekoia.io }')))).toEqual(['intake.sekoia.io']);
  });

  it('refuses TLS files without TLS, a certificate without its key, and a window out of range; tls: false is warned about', () => {
    const problems = (text: string): string => {
      try {
        parseConfig(text, 'relay.yaml', {});
        return '';
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
    };
    expect(problems(yaml(`{ type: relp, tls: false, ca_file: ${TLS}ca.crt }`))).toMatch(/relay\.yaml:\d+:\d+: intakes\[0\]\.output\.tls: ca_file, client_cert_file and server_name need tls: true/);
    expect(problems(yaml(`{ type: relp, client_cert_file: ${TLS}client.crt }`))).toMatch(/client_cert_file and client_key_file go together/);
    expect(problems(yaml('{ type: relp, window: 0 }'))).toMatch(/intakes\[0\]\.output\.window/);
    const plain = parseConfig(yaml('{ type: relp, tls: false, host: 127.0.0.1 }'), 'relay.yaml', {});
    expect(plain.warnings.join('\n')).toMatch(/tls: false sends events and the intake key in clear text/);
    expect(plain.warnings.join('\n')).not.toContain(KEY);
  });
});
