// Bash completion for intake-relay, generated from its --help model: subcommands (with `rules push`
// as two words), each one's options, file names after options whose argument is a file, and the
// choices of options that list them (--format json|text).
import { spellings, type HelpModel } from './help-model.ts';

/** Placeholders that name a file. */
const FILE_ARG = /^(FILE|F)$/;

const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

export function bashCompletion(model: HelpModel, version: string): string {
  const fileOpts = new Set<string>();
  const valueOpts = new Set<string>();
  const choiceOpts = new Map<string, Set<string>>();
  const perCommand = model.commands.map((c) => {
    const opts = new Set<string>();
    for (const o of c.options) {
      for (const s of spellings(model, o.flag)) {
        opts.add(s);
        if (o.choices) {
          const set = choiceOpts.get(s) ?? new Set<string>();
          for (const c of o.choices) set.add(c);
          choiceOpts.set(s, set);
        } else if (o.arg) {
          (FILE_ARG.test(o.arg) ? fileOpts : valueOpts).add(s);
        }
      }
    }
    opts.add('--help');
    return { name: c.words.join(' '), opts: [...opts].join(' '), operands: c.operands };
  });
  const firstWords = [...new Set(model.commands.map((c) => c.words[0]!))];
  const globalOpts = model.other.flatMap((o) => o.match(/--?[a-z][\w-]*/g) ?? []);
  const table = (entries: [string, string][]): string => entries.map(([k, v]) => `    [${quote(k)}]=${quote(v)}`).join('\n');
  const casePattern = (set: Set<string>): string => [...set].join('|') || '--no-such-option';

  return `# bash completion for intake-relay(1) ${version}: generated from \`intake-relay --help\` by
# scripts/deb.ts (do not edit). Installed as /usr/share/bash-completion/completions/intake-relay.

_intake_relay() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  local -A options=(
${table(perCommand.map((c) => [c.name, c.opts]))}
  )
  local -A operands=(
${table(perCommand.filter((c) => c.operands).map((c) => [c.name, 'yes']))}
  )
  case $prev in
${[...choiceOpts].map(([flag, choices]) => `    ${flag})\n      mapfile -t COMPREPLY < <(compgen -W ${quote([...choices].join(' '))} -- "$cur")\n      return ;;\n`).join('')}    ${casePattern(fileOpts)})
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return ;;
    ${casePattern(valueOpts)})
      COMPREPLY=()
      return ;;
  esac
  # The command so far: the words before the cursor that are neither options nor their values.
  local command= i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in
      ${casePattern(new Set([...fileOpts, ...valueOpts, ...choiceOpts.keys()]))}) ((i++)) ;;
      -*) ;;
      *)
        command+=\${command:+ }\${COMP_WORDS[i]}
        [[ -n \${options[$command]+set} ]] && break ;;
    esac
  done
  local candidates
  if [[ -z $command ]]; then
    if [[ $cur == -* ]]; then candidates=${quote(globalOpts.join(' '))}; else candidates=${quote(firstWords.join(' '))}; fi
  elif [[ -n \${options[$command]+set} ]]; then
    # Operands (send's messages) are free text: offer options only to a word that starts with -.
    [[ -n \${operands[$command]+set} && $cur != -* ]] && { COMPREPLY=(); return; }
    candidates=\${options[$command]}
  else
    # A command of several words (rules push) still being typed: its next words.
    local name rest
    candidates=
    for name in "\${!options[@]}"; do
      [[ $name == "$command "* ]] || continue
      rest=\${name#"$command "}
      candidates+=" \${rest%% *}"
    done
  fi
  mapfile -t COMPREPLY < <(compgen -W "$candidates" -- "$cur")
}
complete -F _intake_relay intake-relay
`;
}
