/**
 * The scope and owner grammar (protocol/scope.ts): what is built parses back, nothing outside
 * the grammar parses or validates, and an owner's conversation key cannot be forged by a
 * caller without an owner.
 */
import t from 'tap';
import { Compile } from 'typebox/compile';
import { ownedKey, ownerOf, OwnerString, parseOwner, parseScope, scopeOf, ScopeString } from '../../protocol/scope.js';
import { ConversationId } from '../../protocol/schemas/ask.js';

const SESSION_ID = '0123456789abcdef0123456789abcdef';
const TOKEN_ID = '5b0c6f0e-4d3b-4c47-9a51-1f3e2e7f9d10';

t.test('built scopes and owners parse back to their kind and id', async (t) => {
  t.equal(scopeOf('session', SESSION_ID), `s:${SESSION_ID}`);
  t.equal(scopeOf('token', TOKEN_ID), `t:${TOKEN_ID}`);
  t.same(parseScope(scopeOf('token', TOKEN_ID)), { kind: 'token', id: TOKEN_ID });
  for (const kind of ['session', 'token', 'assistant', 'client'] as const) {
    const owner = ownerOf(kind, 'abc123');
    t.same(parseOwner(owner), { kind, id: 'abc123' }, kind);
    t.ok(Compile(OwnerString).Check(owner), `${kind} owner validates on the bus`);
  }
  t.equal(ownerOf('assistant', 'ff00'), 'a:ff00');
  t.equal(ownerOf('client', 'ff00'), 'c:ff00');
});

t.test('an owner is no scope unless it is a session or a token', async (t) => {
  t.equal(parseScope('a:ff00'), undefined, 'an assistant cookie runs on no connection of its own');
  t.equal(parseScope('c:ff00'), undefined);
  t.notOk(Compile(ScopeString).Check('a:ff00'));
  t.ok(Compile(ScopeString).Check(`s:${SESSION_ID}`));
});

t.test('nothing outside the grammar parses, validates or is built', async (t) => {
  const scope = Compile(ScopeString);
  const owner = Compile(OwnerString);
  for (const bad of ['', 's:', 's', 'x:abc', 's-abc', 'S:abc', 's:a b', 's:a:b', 's:a/b', `s:${'a'.repeat(101)}`, 's:abc\n', ':abc']) {
    t.equal(parseOwner(bad), undefined, JSON.stringify(bad));
    t.equal(parseScope(bad), undefined, JSON.stringify(bad));
    t.notOk(owner.Check(bad), `owner schema refuses ${JSON.stringify(bad)}`);
    t.notOk(scope.Check(bad), `scope schema refuses ${JSON.stringify(bad)}`);
  }
  t.throws(() => scopeOf('session', ''), TypeError);
  t.throws(() => ownerOf('client', 'a:b'), TypeError, 'an id with a colon would make another owner');
});

t.test('a conversation is kept under its owner; without an owner there is none to share', async (t) => {
  t.equal(ownedKey(undefined, 'conv-1'), undefined, 'no owner: no key (a name is never shared between callers)');
  t.equal(ownedKey('', 'conv-1'), undefined);
  const a = ownedKey(`s:${SESSION_ID}`, 'conv-1');
  const b = ownedKey('c:ff00', 'conv-1');
  t.not(a, b, 'two owners, one name: two conversations');
  t.not(a, 'conv-1');
  // an owner's key is never a name a caller could send as its own
  t.notOk(Compile(ConversationId).Check(a), 'an owner\'s key is no conversation id a caller could send');
});
