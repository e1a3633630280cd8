// Gives a buffer's memory back now, where nothing will read it again. V8 frees a Buffer's memory
// when a collection finds the Buffer dead: a scavenge for a young one, a full collection for one
// that lived through two scavenges (promoted). A request body that waits for its answer lives that
// long under load, and at full speed such bodies piled up by the tens of MB between full
// collections (measured on an HTTPS output: about 40 MB of dead buffers at each of the memory
// guard's collections). Detaching the Buffer's ArrayBuffer frees its memory at once. Used for the
// HTTP output's bodies and the syslog output's let-go slabs (outputs/syslog/buffer-pool.ts).

/**
 * Frees `buf`'s memory now, if `buf` is the whole of its own ArrayBuffer: not a view into Node's
 * shared pool of small Buffers or into a slab, and one that may be detached (Node's socket reads
 * may not). Afterwards `buf` is empty. Only for a buffer that nothing will read again, the kernel
 * included (a write still queued reads it later). True where it freed it.
 */
export function freeNow(buf: Uint8Array): boolean {
  const ab = buf.buffer;
  if (!(ab instanceof ArrayBuffer) || ab.detached || buf.byteOffset !== 0 || buf.byteLength !== ab.byteLength) return false;
  try {
    ab.transfer(0);
    return true;
  } catch {
    // Not detachable (made by Node for a socket read, or wasm memory).
    return false;
  }
}
