/**
 * Directory (LDAP) settings set at run time (owner: the settings actor), by setting name
 * (config `ldap.*`). Kept as the overrides `ldap.<name>` (see section.ts); a secret
 * (`bind_password`) arrives sealed by the caller and is kept as given.
 */
import type { OverridesRepository } from './overrides.js';
import { OverrideSection, type SectionRepository } from './section.js';

export const LDAP_SECTION = 'ldap';

export type LdapSettingsRepository = SectionRepository<unknown>;

export function ldapSettingsIn(overrides: OverridesRepository): LdapSettingsRepository {
  return new OverrideSection(overrides, LDAP_SECTION, (v): v is unknown => v !== undefined, 'a setting needs a value');
}
