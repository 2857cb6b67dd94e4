/**
 * The bus as an AsyncAPI 3 document, made from THE registry (protocol/subjects.ts): every
 * request subject (request/reply, served by its owner's queue group), every event (with its
 * durable flag: acknowledged by JetStream, kept in the events stream) and the progress subject
 * of a question, each with the TypeBox schema both sides validate against. Operators can tap
 * and consume events with any NATS client from it. Served at GET /asyncapi.json with the
 * configured prefix; docs/asyncapi.json is the document for the default prefix `cortado`.
 */
import Type from 'typebox';
import { ERRORS } from '../../protocol/errors.js';
import { Header } from '../../protocol/headers.js';
import { ProgressEvent } from '../../protocol/schemas/progress.js';
import { EVENTS, EVENTS_WILDCARD, FORMER_NAMES, FORMER_SETTINGS_NAMES_REMOVED_IN, REQUESTS, eventsStreamName } from '../../protocol/subjects.js';
import { SchemaNames } from './schemas.js';

export interface AsyncApiOptions {
  title: string;
  version: string;
  /** the configured bus.prefix */
  prefix: string;
}

type Json = Record<string, unknown>;

/** An error as it crosses the bus (protocol/errors.ts WireError). */
export const WireError = Type.Object({
  code: Type.Enum(Object.keys(ERRORS)),
  message: Type.String(),
  retryable: Type.Boolean(),
  details: Type.Optional(Type.Object({})),
});

const HEADERS: Json = {
  type: 'object',
  properties: {
    [Header.RequestId]: { type: 'string', description: 'set at the edge, passed on by every hop' },
    [Header.User]: { type: 'string', description: 'the user, where one is known' },
    [Header.Deadline]: { type: 'string', description: 'absolute deadline (epoch ms) after which nobody waits for the answer' },
    [Header.Hop]: { type: 'string', description: 'incremented per forward' },
    [Header.Scope]: { type: 'string', description: 'the database scope of the request (s:<auth session id>, t:<token id>); absent: the server\'s own' },
    [Header.TraceParent]: { type: 'string', description: 'W3C Trace Context of the span the work runs under (00-<trace id>-<span id>-<flags>): one question is one trace across every hop' },
    [Header.Alive]: { type: 'string', const: '1', description: 'a reply message carrying only this header and no body is a sign of life, not the answer: the serving actor is still working (sent every second once a request has run for a second); a requester that hears nothing for 6 s gives up with the retryable ACTOR_UNAVAILABLE' },
  },
};

const EVENT_HEADERS: Json = {
  type: 'object',
  properties: {
    ...(HEADERS.properties as Json),
    [Header.MsgId]: { type: 'string', description: 'the event id: JetStream drops a second copy by it (durable events)' },
  },
};
delete (EVENT_HEADERS.properties as Json)[Header.Alive];

/** A JSON pointer token (RFC 6901). */
function ptr(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function asyncApiDocument(opts: AsyncApiOptions): Json {
  const names = new SchemaNames('#/components/schemas/');
  const { prefix } = opts;
  const channels: Json = {};
  const operations: Json = {};
  const messages: Json = {};
  const stream = eventsStreamName(prefix);

  // the settings requests' former names, served until their removal (deprecated)
  const requests = [...REQUESTS.map((def) => ({ def, replacedBy: undefined as string | undefined })), ...[...FORMER_NAMES].map(([current, def]) => ({ def, replacedBy: current.subject }))];
  for (const { def, replacedBy } of requests) {
    const id = def.subject;
    const deprecated = replacedBy === undefined ? {} : { 'x-cortado-deprecated': { replaced_by: replacedBy, removed_in: FORMER_SETTINGS_NAMES_REMOVED_IN } };
    const reqMsg = `${id}.request`;
    const replyMsg = `${id}.reply`;
    messages[reqMsg] = {
      name: reqMsg,
      title: `${id} request`,
      contentType: 'application/json',
      headers: { $ref: '#/components/schemas/Headers' },
      payload: names.ref(def.request, `${id}.request`),
    };
    messages[replyMsg] = {
      name: replyMsg,
      title: `${id} reply`,
      contentType: 'application/json',
      payload: {
        description: 'the reply envelope: {ok: true, data} or {ok: false, error}',
        oneOf: [
          { type: 'object', required: ['ok', 'data'], properties: { ok: { const: true }, data: names.ref(def.reply, `${id}.reply`) } },
          { type: 'object', required: ['ok', 'error'], properties: { ok: { const: false }, error: names.ref(WireError, 'WireError') } },
        ],
      },
    };
    channels[id] = {
      address: `${prefix}.${def.subject}`,
      title: id,
      description: `served by the ${def.owner} actor's queue group \`${def.owner}\`; a caller waits at most ${def.timeoutMs} ms${replacedBy === undefined ? '' : `. Deprecated: the former name of ${replacedBy}, served until release ${FORMER_SETTINGS_NAMES_REMOVED_IN} for processes of an older release`}`,
      messages: { request: { $ref: `#/components/messages/${ptr(reqMsg)}` } },
    };
    channels[`${id}.reply`] = {
      address: null,
      title: `${id} reply`,
      description: 'the requester\'s inbox (the NATS reply subject of the request)',
      messages: { reply: { $ref: `#/components/messages/${ptr(replyMsg)}` } },
    };
    operations[id] = {
      action: 'receive',
      title: id,
      channel: { $ref: `#/channels/${ptr(id)}` },
      messages: [{ $ref: `#/channels/${ptr(id)}/messages/request` }],
      reply: {
        address: { location: '$message.header#/reply_to', description: 'the NATS reply subject of the request' },
        channel: { $ref: `#/channels/${ptr(`${id}.reply`)}` },
        messages: [{ $ref: `#/channels/${ptr(`${id}.reply`)}/messages/reply` }],
      },
      'x-cortado-owner': def.owner,
      'x-cortado-queue-group': def.owner,
      'x-cortado-timeout-ms': def.timeoutMs,
      ...deprecated,
    };
  }

  for (const def of EVENTS) {
    const id = def.subject;
    messages[id] = {
      name: id,
      title: id,
      contentType: 'application/json',
      headers: { $ref: '#/components/schemas/EventHeaders' },
      payload: names.ref(def.payload, id),
      'x-cortado-durable': def.durable,
    };
    channels[id] = {
      address: `${prefix}.${def.subject}`,
      title: id,
      description: def.durable
        ? `durable: published with a JetStream acknowledgement and its id as ${Header.MsgId}, held in the outbox until the stream ${stream} stored it`
        : `kept in the stream ${stream} when it gets there; may be lost`,
      messages: { event: { $ref: `#/components/messages/${ptr(id)}` } },
    };
    operations[id] = {
      action: 'send',
      title: id,
      channel: { $ref: `#/channels/${ptr(id)}` },
      messages: [{ $ref: `#/channels/${ptr(id)}/messages/event` }],
      'x-cortado-durable': def.durable,
    };
  }

  messages.progress = {
    name: 'progress',
    title: 'a step of one question',
    contentType: 'application/json',
    headers: { $ref: '#/components/schemas/Headers' },
    payload: names.ref(ProgressEvent),
  };
  channels.progress = {
    address: `${prefix}.progress.{request_id}`,
    title: 'progress',
    description: 'the steps of one question while it runs (SSE and WebSocket streaming); plain NATS, not kept',
    parameters: { request_id: { description: 'the request id, lower-cased, with characters other than a-z 0-9 _ - as _' } },
    messages: { progress: { $ref: '#/components/messages/progress' } },
  };
  operations.progress = {
    action: 'send',
    title: 'progress',
    channel: { $ref: '#/channels/progress' },
    messages: [{ $ref: '#/channels/progress/messages/progress' }],
  };

  return {
    asyncapi: '3.0.0',
    info: {
      title: `${opts.title} bus`,
      version: opts.version,
      description: [
        `Every subject of the NATS bus, under the prefix \`${prefix}\` (config bus.prefix: another prefix replaces \`${prefix}.\` in every address).`,
        `Requests are request/reply: the owner's queue group answers with {ok, data} or {ok: false, error}.`,
        `Events (\`${prefix}.${EVENTS_WILDCARD}\`) are kept by the JetStream stream ${stream}: tap them with \`nats sub '${prefix}.${EVENTS_WILDCARD}'\`, \`cortado tap\`, or a durable consumer of your own on the stream.`,
      ].join(' '),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    defaultContentType: 'application/json',
    servers: {
      nats: { host: 'localhost:4222', protocol: 'nats', description: 'the NATS server or cluster of the deployment (config bus.url)' },
    },
    channels,
    operations,
    components: {
      schemas: { Headers: HEADERS, EventHeaders: EVENT_HEADERS, ...names.components() },
      messages: Object.fromEntries(Object.entries(messages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    },
  };
}
