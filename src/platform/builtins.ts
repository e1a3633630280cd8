// Node's built-in modules that the relay takes with process.getBuiltinModule instead of `import`.
// An ES module import of a built-in builds its namespace from every export, which runs the lazy
// getters among them, and node:http's WebSocket, CloseEvent and MessageEvent getters load Node's
// bundled undici: 14 MB of RSS at rest that the relay never uses (measured on Node 24: 62 MB after
// `import 'node:http'`, 48 MB after getBuiltinModule). Types still come from `import type`.

export const http = process.getBuiltinModule('node:http');
export const https = process.getBuiltinModule('node:https');
