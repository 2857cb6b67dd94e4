/**
 * A TCP pass-through on a free loopback port that counts the connections it forwards: put it
 * between Cortado and a server (plugins.auth.db_port, ldap.server) and the count says, from
 * outside Cortado, how many times it went to that server (a login's password check opens one).
 * With `delayMs`, every chunk the server sends reaches the client that much later (in order): a
 * server across a network, so a round trip more or less shows in a login's time.
 */
import net from 'node:net';

export interface TcpCounter {
  port: number;
  /** connections forwarded so far */
  connections(): number;
  /** while on, every new connection is closed at once (the server looks gone) and not counted */
  refuse(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpCounter(target: { host: string; port: number }, opts: { delayMs?: number } = {}): Promise<TcpCounter> {
  const delay = opts.delayMs ?? 0;
  let count = 0;
  let refusing = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    count++;
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream);
    if (delay > 0) {
      // timers of one delay fire in the order they were set: the bytes keep their order
      upstream.on('data', (chunk: Buffer) => { setTimeout(() => { if (!client.destroyed) client.write(chunk); }, delay); });
      upstream.on('end', () => setTimeout(() => client.end(), delay));
    } else {
      upstream.pipe(client);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => count,
    refuse: (on) => { refusing = on; },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
