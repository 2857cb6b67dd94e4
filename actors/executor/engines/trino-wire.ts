/**
 * What Cortado needs from trino-client beyond its public API: the query id before data arrives,
 * JSON parsed exactly, pages bounded by the result caps; and Trino's JSON values as cells.
 */

import type { Trino } from 'trino-client';
import type { Cell } from '../../../protocol/schemas/common.js';
import { exactNumber } from './values.js';
import { PAGE_SLACK_BYTES, type PageBudget } from './wire-cap.js';

/**
 * The query id, known as soon as the coordinator accepted the statement. trino-client keeps the
 * first answer in a private field (`Iterator.iter.queryResult`); the pages it hands out carry
 * the id too, but only once data arrives, which is too late to cancel a slow query.
 */
export function queryIdOf(iterator: unknown): string | undefined {
  const inner = (iterator as { iter?: { queryResult?: { id?: unknown } } } | null)?.iter;
  const id = inner?.queryResult?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * Make the client parse its JSON without losing big integers. trino-client builds each request
 * from a private axios config (`Trino.client.clientConfig`); its transformResponse is set here.
 */
export function readExactly(trino: Trino): boolean {
  const config = (trino as unknown as { client?: { clientConfig?: unknown } }).client?.clientConfig;
  if (!config || typeof config !== 'object') return false;
  (config as { transformResponse?: unknown }).transformResponse = [parseBody];
  return true;
}

function parseBody(data: unknown): unknown {
  if (typeof data !== 'string' || data === '') return data;
  try {
    return parseJsonExact(data);
  } catch {
    return data; // not JSON (an HTTP error page): left for the error mapping
  }
}

interface PageRequest {
  maxContentLength?: number;
  transformResponse?: unknown;
}

/** trino-client's inner client (`Trino.client`): one request method for the statement POST and every nextUri GET. */
interface InnerClient {
  request(cfg: PageRequest): Promise<unknown>;
  query(query: Parameters<Trino['query']>[0]): ReturnType<Trino['query']>;
}

function innerClient(trino: Trino): InnerClient | undefined {
  const inner = (trino as unknown as { client?: Partial<InnerClient> }).client;
  return inner && typeof inner.request === 'function' && typeof inner.query === 'function' ? (inner as InnerClient) : undefined;
}

export function canBoundPages(trino: Trino): boolean {
  return innerClient(trino) !== undefined;
}

/**
 * Run `query` with every page it reads bounded by `budget`: through a view of trino-client's
 * inner client whose request method gives axios a maxContentLength of what the result has left
 * (a larger body is stopped while it arrives) and a transformResponse that counts the body
 * before parsing it. The view shares the client's headers (catalog, session) and its iterator
 * reads the next pages through the view; the cancel (DELETE) goes through the client itself.
 */
export function boundedQuery(trino: Trino, query: Parameters<Trino['query']>[0], budget: PageBudget): ReturnType<Trino['query']> {
  const inner = innerClient(trino);
  if (!inner) return trino.query(query); // warned in clientFor: only the values are checked, once a page is read
  const view = Object.create(inner) as InnerClient;
  const counted = (data: unknown): unknown => {
    if (typeof data === 'string') budget.add(data.length);
    return parseBody(data);
  };
  view.request = (cfg: PageRequest): Promise<unknown> =>
    inner.request({ ...cfg, maxContentLength: budget.left + PAGE_SLACK_BYTES, transformResponse: [counted] }).catch((err: unknown) => {
      if (/maxContentLength size of \d+ exceeded/.test(String((err as { message?: unknown })?.message))) throw budget.pageStopped();
      throw err;
    });
  return inner.query.call(view, query);
}

/** JSON.parse, except that integers a double cannot hold exactly stay strings. */
export function parseJsonExact(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote
      i++;
      while (i < text.length) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else {
          i++;
          if (d === 0x22) break;
        }
      }
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < text.length && /[0-9.eE+-]/.test(text[i] as string)) i++;
      const number = text.slice(start, i);
      if (/^-?\d+$/.test(number) && !Number.isSafeInteger(Number(number))) {
        out += `${text.slice(copied, start)}"${number}"`;
        copied = i;
      }
      continue;
    }
    i++;
  }
  return JSON.parse(out + text.slice(copied));
}

// ---- values -------------------------------------------------------------------------------

/** A Trino JSON value → a JSON scalar for the column's type. */
export function toCell(type: string, value: unknown): Cell {
  if (value === null || value === undefined) return null;
  const base = /^[a-z_]+/i.exec(type)?.[0].toLowerCase() ?? '';
  switch (base) {
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'bigint':
    case 'decimal':
      if (typeof value === 'number' || typeof value === 'string') return exactNumber(String(value));
      break;
    case 'real':
    case 'double':
      if (typeof value === 'number') return value;
      if (typeof value === 'string') return value; // NaN, Infinity
      break;
  }
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  return JSON.stringify(value); // array, map, row
}
