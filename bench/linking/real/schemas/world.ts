/** The world database (countries, cities, languages): transcribed structure (see ../README.md for the source). */
import type { RealSource } from '../model.js';

export const world: RealSource = {
  id: 'world',
  title: 'The world database (countries, cities, languages)',
  citation: [{ repo: 'ghusta/docker-postgres-world-db', path: 'scripts/world.sql', commit: '19a6fdd55840c927501be5d1c0734e446ac54867' }],
  schemas: [
    {
      name: 'world',
      types: [
        { name: 'continent_enum', enum: ['Asia', 'Europe', 'North America', 'Africa', 'Oceania', 'Antarctica', 'South America'] },
      ],
      tables: [
        {
          name: 'city',
          columns: [
            'id integer NOT NULL',
            'name text NOT NULL',
            'country_code character(3) NOT NULL',
            'district text NOT NULL',
            'population integer NOT NULL',
            'local_name text -- City local name',
          ],
          pk: ['id'],
          fks: [
            'country_code -> world.country(code)',
          ],
        },
        {
          name: 'country',
          columns: [
            'code character(3) NOT NULL',
            'name text NOT NULL',
            'continent world.continent_enum NOT NULL',
            'region text NOT NULL',
            'surface_area real NOT NULL',
            'indep_year smallint',
            'population integer NOT NULL',
            'life_expectancy real',
            'gnp numeric(10,2) -- GNP is Gross national product',
            'gnp_old numeric(10,2)',
            'local_name text NOT NULL',
            'government_form text NOT NULL',
            'head_of_state text',
            'capital integer',
            'code2 character(2) NOT NULL -- Following ISO 3166-1 alpha-2 code',
          ],
          pk: ['code'],
          fks: [
            'capital -> world.city(id)',
          ],
        },
        {
          name: 'country_flag',
          columns: [
            'code2 character(2) NOT NULL -- Following ISO 3166-1 alpha-2 code',
            'emoji text NOT NULL -- Source: Emoji flag symbols (https://apps.timwhitlock.info/emoji/tables/iso3166)',
            'unicode text',
          ],
          pk: ['code2'],
        },
        {
          name: 'country_language',
          columns: [
            'country_code character(3) NOT NULL',
            'language text NOT NULL',
            'is_official boolean NOT NULL',
            'percentage real NOT NULL',
          ],
          pk: ['country_code', 'language'],
          fks: [
            'country_code -> world.country(code)',
          ],
        },
      ],
    },
  ],
};
