/**
 * A plugins.auth user's own API tokens (the Tokens tab of the dashboard): list and revoke the
 * tokens their database login minted, never another's. The identity actor decides what is
 * "own" from the session (actors/identity/own-tokens.ts).
 */
import Type, { type Static } from 'typebox';

export const OwnTokensRequest = Type.Object({
  /** the auth session's secret */
  token: Type.String({ maxLength: 256 }),
});
export type OwnTokensRequest = Static<typeof OwnTokensRequest>;

export const OwnTokenRevokeRequest = Type.Object({
  token: Type.String({ maxLength: 256 }),
  id: Type.String({ minLength: 1, maxLength: 100 }),
});
export type OwnTokenRevokeRequest = Static<typeof OwnTokenRevokeRequest>;
