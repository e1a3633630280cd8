// The package version, read once from package.json (dist/ and src/ both sit one level below it).
import { readFileSync } from 'node:fs';

export const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
