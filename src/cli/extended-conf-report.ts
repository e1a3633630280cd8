// What `validate` says about the official forwarder's extended_conf directory: its files are rsyslog
// configuration, which intake-relay does not read; for the documented recipe, the native
// equivalent (keys left in the file: each read from a variable), and what was not translated.

import { translateExtendedConf } from '../config/extended-conf.ts';

export function extendedConfReport(dir: string): string[] {
  const files = translateExtendedConf(dir);
  if (files.length === 0) return [];
  const out = [`warning: ${dir} holds rsyslog configuration, which intake-relay does not read: ${files.map((f) => f.file).join(', ')}.`];
  for (const f of files) {
    if (f.equivalent) {
      out.push(
        `${dir}/${f.file}, as intake-relay configuration (add it to a configuration of your own, converted from intakes.yaml by \`intake-relay validate --print\`; set ${f.keys.map((k) => k.variable).join(', ')} to the keys of ${f.keys.map((k) => k.template).join(', ')}):`,
        '',
        ...f.equivalent.trimEnd().split('\n').map((l) => `  ${l}`),
        '',
      );
    }
    for (const u of f.untranslated) out.push(`  ${f.file}: not translated: ${u}`);
  }
  return out;
}
