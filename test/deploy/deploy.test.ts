/**
 * The deployment files (deploy/; docs/deployment.md), checked without docker or a cluster:
 * every YAML parses; both compose files fit the compose-spec JSON schema (dclint) and a broken
 * copy does not; compose starts NATS with JetStream, PostgreSQL, two edges behind one port and
 * two actor processes, naming only services and volumes it defines; every Kubernetes object
 * fits the API's OpenAPI schema for its kind (kubernetes-models) and a broken copy does not;
 * selectors match, probes ask /health (edges) on a port the container declares, secrets and
 * the config map are the ones defined, and the config map's config.yaml is a configuration
 * Cortado accepts; nats.conf is a valid three-node JetStream cluster to nats-server itself.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { ROOT, parseConfig } from '../../config/load.js';

const DEPLOY = path.join(ROOT, 'deploy');
const DCLINT = path.join(ROOT, 'node_modules', 'dclint', 'bin', 'dclint.cjs');
type Obj = Record<string, any>;

function yamlDocs(file: string): Obj[] {
  const docs = YAML.parseAllDocuments(readFileSync(file, 'utf8'), { merge: true });
  for (const d of docs) if (d.errors.length) throw new Error(`${path.relative(ROOT, file)}: ${d.errors[0]!.message}`);
  return docs.map((d) => d.toJS({ maxAliasCount: 100 }) as Obj).filter((d) => d !== null);
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? yamlFiles(full) : /\.ya?ml$/.test(e.name) ? [full] : [];
  });
}

t.test('every YAML file of deploy/ parses, and the root compose.yaml still does', async (t) => {
  const files = yamlFiles(DEPLOY);
  t.ok(files.length >= 5, 'compose and the Kubernetes manifests');
  for (const f of [...files, path.join(ROOT, 'compose.yaml')]) t.doesNotThrow(() => yamlDocs(f), path.relative(ROOT, f));
});

/**
 * Compose's own schema (the compose-spec JSON schema `docker compose config` validates with),
 * through dclint: its exit code and messages for each file, with the style rules
 * deploy/dclint.json turns off. One run for many files (each start costs about a second).
 */
function dclint(files: string[]): { errors: string[]; warnings: string[] }[] {
  const r = spawnSync(process.execPath, [DCLINT, ...files, '-c', path.join(DEPLOY, 'dclint.json'), '-f', 'json'], { encoding: 'utf8' });
  const reports = JSON.parse(r.stdout) as { filePath: string; messages: { type: string; rule: string; message: string }[] }[];
  const out = files.map((f) => {
    const report = reports.find((x) => path.resolve(x.filePath) === path.resolve(f));
    if (!report) throw new Error(`dclint said nothing of ${f}: ${r.stderr}`);
    const of = (type: string): string[] => report.messages.filter((m) => m.type === type).map((m) => `${m.rule}: ${m.message}`);
    return { errors: of('error'), warnings: of('warning') };
  });
  const errors = out.reduce((n, x) => n + x.errors.length, 0);
  if ((r.status === 0) !== (errors === 0)) throw new Error(`dclint exited ${r.status} with ${errors} errors: ${r.stderr}`);
  return out;
}

/** What the schema cannot see and `docker compose config` refuses: references to services and volumes that are not there. */
function composeReferences(c: Obj): string[] {
  const out: string[] = [];
  const services = c.services as Obj;
  const volumes = new Set(Object.keys(c.volumes ?? {}));
  for (const [name, s] of Object.entries<Obj>(services)) {
    const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
    for (const d of deps) if (!services[d]) out.push(`${name}: depends on unknown service ${d}`);
    for (const [d, cond] of Object.entries<Obj>(Array.isArray(s.depends_on) ? {} : s.depends_on ?? {})) {
      if (cond.condition === 'service_healthy' && services[d] && !services[d].healthcheck) out.push(`${name}: waits for ${d} to be healthy, which has no healthcheck`);
    }
    for (const v of s.volumes ?? []) {
      const source = String(v).split(':')[0]!;
      if (!source.startsWith('.') && !source.startsWith('/') && !volumes.has(source)) out.push(`${name}: volume ${source} is not declared`);
    }
  }
  return out;
}

let copies = 0;
/** A copy of a deploy/ file with one change, in `dir`, under a name of its own. */
function brokenCopy(dir: string, rel: string, from: string | RegExp, to: string): string {
  const text = readFileSync(path.join(DEPLOY, rel), 'utf8');
  const broken = text.replace(from, to);
  if (broken === text) throw new Error(`${rel}: ${String(from)} is not in the file`);
  const file = path.join(dir, `${++copies}-${path.basename(rel)}`);
  writeFileSync(file, broken);
  return file;
}

t.test('compose: the compose spec\'s schema accepts both files, and refuses a broken copy', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-deploy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [deploy, root, misspelt, condition, ports, unpinned] = dclint([
    path.join(DEPLOY, 'compose.yaml'),
    path.join(ROOT, 'compose.yaml'),
    // a misspelt key in the shared anchor: every service that merges it is refused
    brokenCopy(dir, 'compose.yaml', 'stop_grace_period: 40s', 'stop_grace_periods: 40s'),
    brokenCopy(dir, 'compose.yaml', 'postgres: { condition: service_healthy }', 'postgres: { condition: service_up }'),
    brokenCopy(dir, 'compose.yaml', 'ports: ["8000:8000"]', 'ports: "8000:8000"'),
    brokenCopy(dir, 'compose.yaml', 'image: nginx:1.27-alpine', 'image: nginx'),
  ]);
  t.same(deploy, { errors: [], warnings: [] }, 'deploy/compose.yaml');
  t.same(root!.errors, [], 'the root compose.yaml');
  t.match(misspelt!.errors, [/invalid-schema: .*\/services\/[\w-]+.*must NOT have additional properties/], 'an unknown service key');
  t.match(condition!.errors, [/invalid-schema: .*depends_on/], 'a depends_on condition the spec does not have');
  t.match(ports!.errors, [/invalid-schema: .*\/services\/proxy\/ports/], 'ports as a string, not a list');
  t.match(unpinned!.errors, [/service-image-require-explicit-tag/], 'an image without a version tag');
});

t.test('compose: NATS with JetStream, PostgreSQL, two edges behind one port, two actor processes', async (t) => {
  const file = path.join(DEPLOY, 'compose.yaml');
  const [c] = yamlDocs(file);
  t.same(composeReferences(c!), [], 'every service and volume it names is defined');
  t.same(composeReferences({ services: { a: { depends_on: { b: { condition: 'service_healthy' }, c: { condition: 'service_healthy' } }, volumes: ['data:/d'] }, c: {} } }), [
    'a: depends on unknown service b', 'a: waits for c to be healthy, which has no healthcheck', 'a: volume data is not declared',
  ], 'the reference check finds what it looks for');
  const s = c!.services as Obj;
  t.match(s.nats.image, /^nats:/);
  t.ok(s.nats.command.includes('-js'), 'JetStream on');
  t.match(s.postgres.image, /^postgres:/);
  const role = (svc: Obj): string | undefined => {
    const i = (svc.command ?? []).indexOf('--role');
    return i >= 0 ? svc.command[i + 1] : undefined;
  };
  const edges = Object.keys(s).filter((k) => role(s[k]) === 'edge');
  const actors = Object.keys(s).filter((k) => role(s[k]) === 'actors');
  t.same(edges.sort(), ['edge-1', 'edge-2']);
  t.same(actors.sort(), ['actors-1', 'actors-2']);
  for (const k of [...edges, ...actors]) {
    t.equal(s[k].environment.NATS_URL, 'nats://nats:4222', `${k} talks to the nats service`);
    t.equal(s[k].environment.PGHOST, 'postgres', `${k} knows the database`);
    t.notOk(s[k].ports, `${k} publishes no port of its own`);
  }
  // one published port: the proxy, whose upstream is both edges
  const published = Object.keys(s).filter((k) => s[k].ports?.length);
  t.same(published, ['proxy']);
  t.same(s.proxy.ports, ['8000:8000']);
  const mount = (s.proxy.volumes as string[]).find((v) => v.includes('nginx.conf'))!;
  const nginx = readFileSync(path.join(DEPLOY, mount.split(':')[0]!), 'utf8');
  const upstream = /upstream\s+(\w+)\s*\{([^}]*)\}/.exec(nginx);
  t.ok(upstream, 'an upstream');
  t.same([...upstream![2]!.matchAll(/server\s+([\w.-]+:\d+)/g)].map((m) => m[1]).sort(), ['edge-1:8000', 'edge-2:8000']);
  t.match(nginx, new RegExp(`proxy_pass\\s+http://${upstream![1]}`));
  t.match(nginx, /listen\s+8000/);
  t.match(nginx, /proxy_next_upstream[^;]*http_503/, 'a draining edge\'s 503 goes to the other');
});

/**
 * An object checked against the Kubernetes API's OpenAPI schema for its apiVersion and kind
 * (kubernetes-models: the schemas of the API server's own OpenAPI document, compiled): types,
 * required fields, enums and formats. An unknown kind is a problem too.
 */
async function k8sProblems(o: Obj): Promise<string[]> {
  const [group, version] = String(o.apiVersion).includes('/') ? String(o.apiVersion).split('/') : ['', String(o.apiVersion)];
  const kind = String(o.kind);
  const mod = await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${kind}`).catch(() => null);
  if (typeof mod?.[kind] !== 'function') return [`${o.apiVersion} ${kind}: not a kind of the Kubernetes API`];
  try {
    new mod[kind](o).validate();
    return [];
  } catch (e) {
    return [`${kind} ${o.metadata?.name}: ${(e as Error).message}`];
  }
}

t.test('Kubernetes: every object fits the API\'s schema, and a broken copy does not', async (t) => {
  const files = yamlFiles(path.join(DEPLOY, 'k8s'));
  for (const f of files) {
    for (const o of yamlDocs(f)) t.same(await k8sProblems(o), [], `${path.basename(f)}: ${o.kind} ${o.metadata?.name}`);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-deploy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const problems = async (file: string): Promise<string[]> => (await Promise.all(yamlDocs(file).map(k8sProblems))).flat();
  t.match(await problems(brokenCopy(dir, 'k8s/edge.yaml', /replicas: 2\b/, 'replicas: two')), [/Deployment cortado-edge: .*\/spec\/replicas must be integer/], 'replicas not a number');
  t.match(await problems(brokenCopy(dir, 'k8s/edge.yaml', /\n(\s+)selector:\n\s+matchLabels: \{[^}]*\}/, '')), [/Deployment cortado-edge: .*must have required property '?selector/], 'a Deployment without its selector');
  t.match(await problems(brokenCopy(dir, 'k8s/actors.yaml', 'kind: PodDisruptionBudget', 'kind: PodDisruptionBudgets')), [/policy\/v1 PodDisruptionBudgets: not a kind/], 'a kind the API does not have');
});

t.test('Kubernetes: whole objects, matching selectors, probes on /health, secrets and config that exist', async (t) => {
  const objects = yamlFiles(path.join(DEPLOY, 'k8s')).flatMap((f) => yamlDocs(f).map((o): Obj => ({ ...o, file: path.basename(f) })));
  for (const o of objects) {
    t.match(o.apiVersion, /^(v1|apps\/v1|policy\/v1)$/, `${o.file}: apiVersion`);
    t.ok(typeof o.kind === 'string' && typeof o.metadata?.name === 'string', `${o.file}: kind and metadata.name`);
  }
  const of = (kind: string): Obj[] => objects.filter((o) => o.kind === kind);
  const deployments = of('Deployment');
  t.same(deployments.map((d) => d.metadata.name).sort(), ['cortado-actors', 'cortado-edge']);
  const secrets = new Map(of('Secret').map((s) => [s.metadata.name, Object.keys({ ...s.data, ...s.stringData })]));
  const maps = new Map(of('ConfigMap').map((m) => [m.metadata.name, m]));
  const matches = (selector: Obj, labels: Obj): boolean => Object.entries(selector).every(([k, v]) => labels?.[k] === v);

  for (const d of deployments) {
    const name = d.metadata.name as string;
    const labels = d.spec.template.metadata.labels;
    t.ok(matches(d.spec.selector.matchLabels, labels), `${name}: the selector matches its pods`);
    const [c] = d.spec.template.spec.containers as Obj[];
    const roleArg = c!.args[c!.args.indexOf('--role') + 1];
    t.equal(roleArg, name === 'cortado-edge' ? 'edge' : 'actors', `${name}: runs its role`);
    const ports = new Map((c!.ports as Obj[]).map((p) => [p.name, p.containerPort]));
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      const get = c![probe]?.httpGet;
      t.ok(get, `${name}: ${probe}`);
      t.ok(ports.has(get.port) || [...ports.values()].includes(get.port), `${name}: ${probe} asks a port the container declares`);
      // an edge answers /health on its port; an actor pod on its metrics listener (docs/deployment.md)
      t.equal(get.path, '/health', `${name}: ${probe} path`);
    }
    t.ok(c!.resources?.requests?.cpu && c!.resources?.requests?.memory, `${name}: resource requests`);
    t.ok(c!.resources?.limits?.memory, `${name}: a memory limit`);
    t.ok(d.spec.template.spec.terminationGracePeriodSeconds > 30, `${name}: time to drain`);
    for (const e of c!.env as Obj[]) {
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) t.ok(secrets.get(ref.name)?.includes(ref.key), `${name}: secret ${ref.name}/${ref.key} is defined`);
    }
    for (const v of d.spec.template.spec.volumes ?? []) if (v.configMap) t.ok(maps.has(v.configMap.name), `${name}: config map ${v.configMap.name} is defined`);
    const pdb = of('PodDisruptionBudget').find((p) => matches(p.spec.selector.matchLabels, labels));
    t.ok(pdb && pdb.spec.minAvailable >= 1, `${name}: a PodDisruptionBudget keeps one`);
  }
  const edge = deployments.find((d) => d.metadata.name === 'cortado-edge')!;
  const [svc] = of('Service');
  t.ok(svc && matches(svc.spec.selector, edge.spec.template.metadata.labels), 'the Service selects the edges');
  t.ok((edge.spec.template.spec.containers[0].ports as Obj[]).some((p) => p.name === svc!.spec.ports[0].targetPort), 'the Service targets the edge\'s http port');

  // the config map's config.yaml is a configuration Cortado accepts, on the 3-node cluster
  const text = maps.get('cortado-config')!.data['config.yaml'] as string;
  const env = { NATS_URL: 'nats://nats-0.nats:4222', ANTHROPIC_API_KEY: 'k', PGHOST: 'postgres', PGDATABASE: 'cortado', PGUSER: 'cortado', PGPASSWORD: 'p' };
  const { config } = parseConfig(text, 'configmap config.yaml', env);
  t.equal(config.bus.replicas, 3, 'streams and buckets with three copies');
  t.equal(config.bus.autostart, false);
  t.equal(config.metrics.listen, '0.0.0.0:9464', 'the metrics listener the probes and the scrape annotation use');
  t.equal(String(edge.spec.template.metadata.annotations['prometheus.io/port']), '9464');
});

t.test('nats.conf: a three-node JetStream cluster nats-server accepts', async (t) => {
  const file = path.join(DEPLOY, 'nats', 'nats.conf');
  const conf = readFileSync(file, 'utf8');
  const routes = /routes\s*:\s*\[([^\]]*)\]/.exec(conf)?.[1] ?? '';
  t.equal([...routes.matchAll(/nats-route:\/\/[\w.-]+:6222/g)].length, 3, 'three routes');
  t.match(conf, /jetstream\s*\{[^}]*store_dir/, 'JetStream with a store');
  t.match(conf, /cluster\s*\{[^}]*name:\s*\w+/, 'a named cluster');
  for (const name of ['nats-0', 'nats-1', 'nats-2']) {
    const r = spawnSync('nats-server', ['-c', file, '-t'], { env: { ...process.env, NATS_SERVER_NAME: name }, encoding: 'utf8' });
    t.equal(r.status, 0, `${name}: ${(r.stderr || r.stdout).trim()}`);
  }
  const bad = spawnSync('nats-server', ['-c', '/dev/stdin', '-t'], { input: 'cluster { routes: [ }', encoding: 'utf8' });
  t.not(bad.status, 0, 'the check refuses a broken file');
});
