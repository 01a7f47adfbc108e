/** The window a brotli stream declares in its header (RFC 7932 9.1, WBITS). */
export function declaredWindowBits(stream: Buffer): number {
  const bits = stream.readUInt8(0) | (stream.readUInt8(1) << 8);
  if ((bits & 1) === 0) return 16;
  const n = (bits >> 1) & 7;
  if (n !== 0) return 17 + n;
  const m = (bits >> 4) & 7;
  return m === 0 ? 17 : 8 + m;
}
