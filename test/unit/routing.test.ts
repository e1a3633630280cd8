import { describe, expect, it } from 'vitest';
import { FilterSet } from '../../src/routing/filters.ts';
import { compileRoutes, NO_ROUTE, patternWarning, ROUTE_DROP, textMatcher } from '../../src/routing/router.ts';
import { parseSyslog, type HeaderDefaults } from '../../src/syslog/parse.ts';
import { parseConfig, ConfigError } from '../../src/config/load.ts';
import type { RouteConfig } from '../../src/routing/schema.ts';

const D: HeaderDefaults = { pri: 13, hostname: '', appName: '', procId: '' };
const ev = (line: string, sender = '10.0.0.1') => {
  const b = Buffer.from(line);
  return parseSyslog(b, 0, b.length, 0, sender, D);
};
const intakes = ['fw', 'proxy', 'db', 'misc'];
const idx = (n: string) => intakes.indexOf(n);
const route = (match: RouteConfig['match'], to: string | 'drop'): RouteConfig => (to === 'drop' ? { match, drop: true } : { match, intake: to });

describe('textMatcher', () => {
  it('does exact, prefix, suffix and regex', () => {
    expect([textMatcher('fw1')('fw1'), textMatcher('fw1')('fw12')]).toEqual([true, false]);
    expect([textMatcher('fw-*')('fw-paris'), textMatcher('fw-*')('xfw-')]).toEqual([true, false]);
    expect([textMatcher('*.corp')('a.corp'), textMatcher('*.corp')('a.corp.x')]).toEqual([true, false]);
    expect([textMatcher('/^DB-\\d+$/i')('db-12'), textMatcher('/^DB-\\d+$/i')('db-x')]).toEqual([true, false]);
  });
});

describe('one pattern syntax', () => {
  it('"/re/flags" is a regular expression in every field; plain message text is contained, plain header text exact', () => {
    const { router, problems, warnings } = compileRoutes(
      [
        route({ message: '/healthcheck-\\d+/' }, 'drop'),
        route({ message: ['connection reset', '/^AUDIT /i'] }, 'fw'),
        route({ app_name: '/^squid$/' }, 'proxy'),
      ],
      'misc',
      idx,
    );
    expect(problems).toEqual([]);
    expect(warnings).toEqual([]);
    expect(router.route(ev('<14>Nov 22 10:00:00 h app: GET /healthcheck-42 200'))).toBe(ROUTE_DROP);
    expect(router.route(ev('<14>Nov 22 10:00:00 h app: GET /healthcheck-x 200'))).toBe(idx('misc'));
    expect(router.route(ev('<14>Nov 22 10:00:00 h app: peer: connection reset by peer'))).toBe(idx('fw'));
    expect(router.route(ev('<14>Nov 22 10:00:00 h app: audit login'))).toBe(idx('fw'));
    expect(router.route(ev('<14>Nov 22 10:00:00 h squid: x'))).toBe(idx('proxy'));
    expect(router.route(ev('<14>Nov 22 10:00:00 h squid2: x'))).toBe(idx('misc'));
  });

  it('warns when a pattern written as text looks like a regular expression, or has a delimiter missing', () => {
    const { warnings, problems } = compileRoutes(
      [route({ message: 'healthcheck-\\d+' }, 'drop'), route({ hostname: '/^db-\\d+' }, 'db'), route({ app_name: ['sshd', 'cron[0-9]'] }, 'misc'), route({ message: 'plain words' }, 'fw')],
      'drop',
      idx,
    );
    expect(problems).toEqual([]);
    expect(warnings.map((w) => [w.path.join('.'), w.message])).toEqual([
      ['routes.0.match.message', '"healthcheck-\\d+" looks like a regular expression but is matched as text: write "/healthcheck-\\d+/" for one'],
      ['routes.1.match.hostname', '"/^db-\\d+" is matched as text: a regular expression is written "/expression/flags", with a / at each end'],
      ['routes.2.match.app_name', '"cron[0-9]" looks like a regular expression but is matched as text: write "/cron[0-9]/" for one'],
    ]);
    expect(['fw-*', '*.corp', 'web.example.com', 'GET /index.html', 'a.b'].map(patternWarning)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('validate prints the warning with the listener\'s place', () => {
    const yaml = `listeners:
  - type: tcp
    port: 5514
    routes:
      - { match: { message: "healthcheck-\\\\d+" }, drop: true }
    default: a
intakes:
  - { name: a, intake_key: AbCdEfGh0123456789, inputs: [] }
`;
    const cfg = parseConfig(yaml, '/etc/x.yaml', {});
    expect(cfg.warnings).toContainEqual(expect.stringMatching(/^listeners\[0\]\.routes\[0\]\.match\.message: "healthcheck-\\d\+" looks like a regular expression/));
  });
});

describe('routes', () => {
  const { router, problems } = compileRoutes(
    [
      route({ sender: ['10.1.0.0/16', '2001:db8::/32'] }, 'fw'),
      route({ app_name: 'squid*' }, 'proxy'),
      route({ hostname: '/^db-\\d+$/', severity: ['err', 'crit'] }, 'db'),
      route({ facility: 'local7', message: 'DROPME' }, 'drop'),
    ],
    'misc',
    idx,
  );

  it('first match wins, then the default', () => {
    expect(problems).toEqual([]);
    expect(router.route(ev('<14>Nov 22 10:00:00 h squid[1]: x', '10.1.2.3'))).toBe(idx('fw'));
    expect(router.route(ev('<14>Nov 22 10:00:00 h x: y', '2001:db8::7'))).toBe(idx('fw'));
    expect(router.route(ev('<14>Nov 22 10:00:00 h squid[1]: x'))).toBe(idx('proxy'));
    expect(router.route(ev('<11>Nov 22 10:00:00 db-1 pg: x'))).toBe(idx('db')); // user.err
    expect(router.route(ev('<14>Nov 22 10:00:00 db-1 pg: x'))).toBe(idx('misc')); // user.info: not err/crit
    expect(router.route(ev('<190>Nov 22 10:00:00 h a: please DROPME'))).toBe(ROUTE_DROP); // local7.info
    expect(router.route(ev('<190>Nov 22 10:00:00 h a: keep me'))).toBe(idx('misc'));
    expect(router.route(ev('no header at all', ''))).toBe(idx('misc'));
  });

  it('its memo never changes a decision: many interleaved sources, in any order', () => {
    const { router: r } = compileRoutes(
      [route({ app_name: '*7' }, 'fw'), route({ app_name: '/^app[0-3]/' }, 'proxy'), route({ hostname: 'h2' }, 'db')],
      'misc',
      idx,
    );
    // Sources as the parser makes them: a source's events share their header strings.
    const sources = Array.from({ length: 40 }, (_, i) => ev(`<14>Nov 22 10:00:00 h${i % 3} app${i}: x`));
    const expected = (i: number): number => (String(i).endsWith('7') ? idx('fw') : /^[0-3]/.test(String(i)) ? idx('proxy') : i % 3 === 2 ? idx('db') : idx('misc'));
    let seed = 7;
    for (let n = 0; n < 50_000; n++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const i = n < 25_000 ? (seed >>> 8) % 40 : (seed >>> 8) % 3; // many sources, then few (the memo comes back)
      expect(r.route(sources[i]!)).toBe(expected(i));
    }
  });

  it('reports bad CIDRs, bad regexes and unknown intakes with their place', () => {
    const { problems: p } = compileRoutes(
      [route({ sender: '10.0.0.0/33' }, 'fw'), route({ hostname: '/(/' }, 'fw'), route({ message: '/[/' }, 'fw'), route({}, 'nope')],
      'elsewhere',
      idx,
    );
    expect(p.map((x) => [x.path.join('.'), x.message.split(':')[0]])).toEqual([
      ['routes.0.match.sender', '"10.0.0.0/33" is not an IP address or CIDR'],
      ['routes.1.match.hostname', 'invalid regular expression'],
      ['routes.2.match.message', 'invalid regular expression'],
      ['routes.3.intake', 'no intake is named "nope"'],
      ['default', 'no intake is named "elsewhere" (or use drop)'],
    ]);
    const { router: r } = compileRoutes([route({ app_name: 'x' }, 'fw')], 'drop', idx);
    expect(r.route(ev('<14>Nov 22 10:00:00 h y: z'))).toBe(NO_ROUTE);
  });

  it('are config errors at the right line', () => {
    const yaml = `intakes:
  - name: fw
    intake_key: AbC123
listeners:
  - type: udp
    port: 514
    routes:
      - match: { sender: 300.1.1.1 }
        intake: fw
      - match: { app_name: x }
        intake: ghost
      - match: {}
`;
    let problems: readonly string[] = [];
    try {
      parseConfig(yaml, 'r.yaml', {});
    } catch (err) {
      problems = (err as ConfigError).problems;
    }
    expect(problems).toEqual([
      expect.stringMatching(/^r\.yaml:12:9: listeners\[0\]\.routes\[2\]: a route needs either intake or drop: true$/),
    ]);
    try {
      parseConfig(yaml.replace('      - match: {}\n', ''), 'r.yaml', {});
    } catch (err) {
      problems = (err as ConfigError).problems;
    }
    expect(problems).toEqual([
      'r.yaml:8:26: listeners[0].routes[0].match.sender: "300.1.1.1" is not an IP address or CIDR',
      'r.yaml:11:17: listeners[0].routes[1].intake: no intake is named "ghost"',
    ]);
  });
});

describe('filters (optimization-rule shape)', () => {
  const f = new FilterSet([
    { description: 'noisy app', enabled: true, filters: [{ field: 'app_name', operator: '==', value: 'noisy' }] },
    {
      description: 'browser file events',
      enabled: true,
      filters: [
        { field: 'process.name', operator: 'in', value: ['chrome.exe', 'firefox.exe'] },
        { field: 'action.name', operator: '==', value: 'file-created' },
      ],
    },
    { description: 'disabled', enabled: false, filters: [{ field: 'hostname', operator: '==', value: 'h' }] },
    { description: 'debug level', enabled: true, filters: [{ field: 'severity', operator: 'in', value: ['debug', 6] }] },
    { description: 'missing field', enabled: true, filters: [{ field: 'no.such.path', operator: '==', value: 'x' }] },
  ]);
  const json = (o: object) => ev(`<13>Nov 22 10:00:00 h agent: ${JSON.stringify(o)}`);

  it('drops what every condition of an enabled rule matches, and nothing else', () => {
    expect(f.match(ev('<13>Nov 22 10:00:00 h noisy: x'))).toBe(0);
    expect(f.match(json({ process: { name: 'chrome.exe' }, action: { name: 'file-created' } }))).toBe(1);
    expect(f.match(json({ process: { name: 'chrome.exe' }, action: { name: 'connected-to' } }))).toBe(-1);
    expect(f.match(json({ process: { name: 'bash' }, action: { name: 'file-created' } }))).toBe(-1);
    expect(f.match(json({ action: { name: 'file-created' } }))).toBe(-1); // the field does not exist
    expect(f.match(ev('<13>Nov 22 10:00:00 h other: x'))).toBe(-1); // hostname h: that rule is disabled
    expect(f.match(ev('<15>Nov 22 10:00:00 h other: x'))).toBe(3); // severity 7 = debug
    expect(f.match(ev('<14>Nov 22 10:00:00 h other: x'))).toBe(3); // severity 6 given as a number
    expect(f.match(ev('<13>Nov 22 10:00:00 h other: {not json'))).toBe(-1);
    expect(f.name(1)).toBe('browser file events');
  });
});
