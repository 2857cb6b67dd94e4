/** Pagila, the PostgreSQL port of the Sakila DVD-rental store: transcribed structure (see ../README.md for the source). */
import type { RealSource } from '../model.js';

export const dvdrental: RealSource = {
  id: 'dvdrental',
  title: 'Pagila, the PostgreSQL port of the Sakila DVD-rental store',
  citation: [{ repo: 'devrimgunduz/pagila', path: 'pagila-schema.sql', commit: 'e0e35a666f31a786b9d3c06cb83799fc46db25d4' }],
  schemas: [
    {
      name: 'dvdrental',
      types: [
        { name: 'mpaa_rating', enum: ['G', 'PG', 'PG-13', 'R', 'NC-17'] },
        { name: 'year', domain: 'integer CHECK (((VALUE >= 1901) AND (VALUE <= 2155)))' },
      ],
      tables: [
        {
          name: 'actor',
          columns: [
            'actor_id integer NOT NULL',
            'first_name text NOT NULL',
            'last_name text NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['actor_id'],
        },
        {
          name: 'address',
          columns: [
            'address_id integer NOT NULL',
            'address text NOT NULL',
            'address2 text',
            'district text NOT NULL',
            'city_id integer NOT NULL',
            'postal_code text',
            'phone text NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['address_id'],
          fks: [
            'city_id -> dvdrental.city(city_id)',
          ],
        },
        {
          name: 'category',
          columns: [
            'category_id integer NOT NULL',
            'name text NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['category_id'],
        },
        {
          name: 'city',
          columns: [
            'city_id integer NOT NULL',
            'city text NOT NULL',
            'country_id integer NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['city_id'],
          fks: [
            'country_id -> dvdrental.country(country_id)',
          ],
        },
        {
          name: 'country',
          columns: [
            'country_id integer NOT NULL',
            'country text NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['country_id'],
        },
        {
          name: 'customer',
          columns: [
            'customer_id integer NOT NULL',
            'store_id integer NOT NULL',
            'first_name text NOT NULL',
            'last_name text NOT NULL',
            'email text',
            'address_id integer NOT NULL',
            'activebool boolean NOT NULL',
            'create_date date NOT NULL',
            'last_update timestamp with time zone',
            'active integer',
          ],
          pk: ['customer_id'],
          fks: [
            'address_id -> dvdrental.address(address_id)',
            'store_id -> dvdrental.store(store_id)',
          ],
        },
        {
          name: 'film',
          columns: [
            'film_id integer NOT NULL',
            'title text NOT NULL',
            'description text',
            'release_year dvdrental.year',
            'language_id integer NOT NULL',
            'original_language_id integer',
            'rental_duration smallint NOT NULL',
            'rental_rate numeric(4,2) NOT NULL',
            'length smallint',
            'replacement_cost numeric(5,2) NOT NULL',
            'rating dvdrental.mpaa_rating',
            'last_update timestamp with time zone NOT NULL',
            'special_features text[]',
            'fulltext tsvector NOT NULL',
          ],
          pk: ['film_id'],
          fks: [
            'language_id -> dvdrental.language(language_id)',
            'original_language_id -> dvdrental.language(language_id)',
          ],
        },
        {
          name: 'film_actor',
          columns: [
            'actor_id integer NOT NULL',
            'film_id integer NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['actor_id', 'film_id'],
          fks: [
            'actor_id -> dvdrental.actor(actor_id)',
            'film_id -> dvdrental.film(film_id)',
          ],
        },
        {
          name: 'film_category',
          columns: [
            'film_id integer NOT NULL',
            'category_id integer NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['film_id', 'category_id'],
          fks: [
            'category_id -> dvdrental.category(category_id)',
            'film_id -> dvdrental.film(film_id)',
          ],
        },
        {
          name: 'inventory',
          columns: [
            'inventory_id integer NOT NULL',
            'film_id integer NOT NULL',
            'store_id integer NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['inventory_id'],
          fks: [
            'film_id -> dvdrental.film(film_id)',
            'store_id -> dvdrental.store(store_id)',
          ],
        },
        {
          name: 'language',
          columns: [
            'language_id integer NOT NULL',
            'name character(20) NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['language_id'],
        },
        {
          name: 'payment',
          columns: [
            'payment_id integer NOT NULL',
            'customer_id integer NOT NULL',
            'staff_id integer NOT NULL',
            'rental_id integer NOT NULL',
            'amount numeric(5,2) NOT NULL',
            'payment_date timestamp with time zone NOT NULL',
          ],
          pk: ['payment_date', 'payment_id'],
          fks_on: 'partitions',
          partitions: {
            by: 'RANGE (payment_date)',
            parts: [
              { name: 'payment_p2022_01', bound: 'FROM (\'2022-01-01 00:00:00+00\') TO (\'2022-02-01 00:00:00+00\')', fks: true },
              { name: 'payment_p2022_02', bound: 'FROM (\'2022-02-01 00:00:00+00\') TO (\'2022-03-01 00:00:00+00\')', fks: true },
              { name: 'payment_p2022_03', bound: 'FROM (\'2022-03-01 00:00:00+00\') TO (\'2022-04-01 00:00:00+00\')', fks: true },
              { name: 'payment_p2022_04', bound: 'FROM (\'2022-04-01 00:00:00+00\') TO (\'2022-05-01 00:00:00+00\')', fks: true },
              { name: 'payment_p2022_05', bound: 'FROM (\'2022-05-01 00:00:00+00\') TO (\'2022-06-01 00:00:00+00\')', fks: true },
              { name: 'payment_p2022_06', bound: 'FROM (\'2022-06-01 00:00:00+00\') TO (\'2022-07-01 00:00:00+00\')', fks: true },
              { name: 'payment_p2022_07', bound: 'FROM (\'2022-07-01 00:00:00+00\') TO (\'2022-08-01 00:00:00+00\')' },
            ],
          },
          fks: [
            'customer_id -> dvdrental.customer(customer_id)',
            'rental_id -> dvdrental.rental(rental_id)',
            'staff_id -> dvdrental.staff(staff_id)',
          ],
        },
        {
          name: 'rental',
          columns: [
            'rental_id integer NOT NULL',
            'rental_date timestamp with time zone NOT NULL',
            'inventory_id integer NOT NULL',
            'customer_id integer NOT NULL',
            'return_date timestamp with time zone',
            'staff_id integer NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['rental_id'],
          fks: [
            'customer_id -> dvdrental.customer(customer_id)',
            'inventory_id -> dvdrental.inventory(inventory_id)',
            'staff_id -> dvdrental.staff(staff_id)',
          ],
        },
        {
          name: 'staff',
          columns: [
            'staff_id integer NOT NULL',
            'first_name text NOT NULL',
            'last_name text NOT NULL',
            'address_id integer NOT NULL',
            'email text',
            'store_id integer NOT NULL',
            'active boolean NOT NULL',
            'username text NOT NULL',
            'password text',
            'last_update timestamp with time zone NOT NULL',
            'picture bytea',
          ],
          pk: ['staff_id'],
          fks: [
            'address_id -> dvdrental.address(address_id)',
            'store_id -> dvdrental.store(store_id)',
          ],
        },
        {
          name: 'store',
          columns: [
            'store_id integer NOT NULL',
            'manager_staff_id integer NOT NULL',
            'address_id integer NOT NULL',
            'last_update timestamp with time zone NOT NULL',
          ],
          pk: ['store_id'],
          fks: [
            'address_id -> dvdrental.address(address_id)',
          ],
        },
      ],
      views: [
        {
          name: 'actor_info',
          columns: [
            'actor_id integer',
            'first_name text',
            'last_name text',
            'film_info text',
          ],
          sql: 'SELECT a.actor_id, a.first_name, a.last_name, string_agg(DISTINCT c.name || \': \' || f.title, \'; \') FROM dvdrental.actor a LEFT JOIN dvdrental.film_actor fa ON fa.actor_id = a.actor_id LEFT JOIN dvdrental.film f ON f.film_id = fa.film_id LEFT JOIN dvdrental.film_category fc ON fc.film_id = fa.film_id LEFT JOIN dvdrental.category c ON c.category_id = fc.category_id GROUP BY a.actor_id, a.first_name, a.last_name',
        },
        {
          name: 'customer_list',
          columns: [
            'id integer',
            'name text',
            'address text',
            '"zip code" text',
            'phone text',
            'city text',
            'country text',
            'notes text',
            'sid integer',
          ],
          sql: 'SELECT cu.customer_id, cu.first_name || \' \' || cu.last_name, ad.address, ad.postal_code, ad.phone, ci.city, co.country, CASE WHEN cu.activebool THEN \'active\' ELSE \'\' END, cu.store_id FROM dvdrental.customer cu JOIN dvdrental.address ad ON ad.address_id = cu.address_id JOIN dvdrental.city ci ON ci.city_id = ad.city_id JOIN dvdrental.country co ON co.country_id = ci.country_id',
        },
        {
          name: 'film_list',
          columns: [
            'fid integer',
            'title text',
            'description text',
            'category text',
            'price numeric(4,2)',
            'length smallint',
            'rating dvdrental.mpaa_rating',
            'actors text',
          ],
          sql: 'SELECT f.film_id, f.title, f.description, c.name, f.rental_rate, f.length, f.rating, string_agg(ac.first_name || \' \' || ac.last_name, \', \') FROM dvdrental.film f JOIN dvdrental.film_category fc ON fc.film_id = f.film_id JOIN dvdrental.category c ON c.category_id = fc.category_id JOIN dvdrental.film_actor fa ON fa.film_id = f.film_id JOIN dvdrental.actor ac ON ac.actor_id = fa.actor_id GROUP BY f.film_id, c.name',
        },
        {
          name: 'nicer_but_slower_film_list',
          columns: [
            'fid integer',
            'title text',
            'description text',
            'category text',
            'price numeric(4,2)',
            'length smallint',
            'rating dvdrental.mpaa_rating',
            'actors text',
          ],
          sql: 'SELECT f.film_id, f.title, f.description, c.name, f.rental_rate, f.length, f.rating, string_agg(initcap(ac.first_name) || \' \' || initcap(ac.last_name), \', \') FROM dvdrental.film f JOIN dvdrental.film_category fc ON fc.film_id = f.film_id JOIN dvdrental.category c ON c.category_id = fc.category_id JOIN dvdrental.film_actor fa ON fa.film_id = f.film_id JOIN dvdrental.actor ac ON ac.actor_id = fa.actor_id GROUP BY f.film_id, c.name',
        },
        {
          name: 'rental_by_category',
          materialized: true,
          columns: [
            'category text',
            'total_sales numeric',
          ],
          sql: 'SELECT c.name, sum(p.amount) FROM dvdrental.payment p JOIN dvdrental.rental r ON r.rental_id = p.rental_id JOIN dvdrental.inventory i ON i.inventory_id = r.inventory_id JOIN dvdrental.film_category fc ON fc.film_id = i.film_id JOIN dvdrental.category c ON c.category_id = fc.category_id GROUP BY c.name',
        },
        {
          name: 'sales_by_film_category',
          columns: [
            'category text',
            'total_sales numeric',
          ],
          sql: 'SELECT c.name, sum(p.amount) FROM dvdrental.payment p JOIN dvdrental.rental r ON r.rental_id = p.rental_id JOIN dvdrental.inventory i ON i.inventory_id = r.inventory_id JOIN dvdrental.film_category fc ON fc.film_id = i.film_id JOIN dvdrental.category c ON c.category_id = fc.category_id GROUP BY c.name',
        },
        {
          name: 'sales_by_store',
          columns: [
            'store text',
            'manager text',
            'total_sales numeric',
          ],
          sql: 'SELECT ci.city || \',\' || co.country, m.first_name || \' \' || m.last_name, sum(p.amount) FROM dvdrental.payment p JOIN dvdrental.rental r ON r.rental_id = p.rental_id JOIN dvdrental.inventory i ON i.inventory_id = r.inventory_id JOIN dvdrental.store s ON s.store_id = i.store_id JOIN dvdrental.address ad ON ad.address_id = s.address_id JOIN dvdrental.city ci ON ci.city_id = ad.city_id JOIN dvdrental.country co ON co.country_id = ci.country_id JOIN dvdrental.staff m ON m.staff_id = s.manager_staff_id GROUP BY s.store_id, ci.city, co.country, m.first_name, m.last_name',
        },
        {
          name: 'staff_list',
          columns: [
            'id integer',
            'name text',
            'address text',
            '"zip code" text',
            'phone text',
            'city text',
            'country text',
            'sid integer',
          ],
          sql: 'SELECT s.staff_id, s.first_name || \' \' || s.last_name, ad.address, ad.postal_code, ad.phone, ci.city, co.country, s.store_id FROM dvdrental.staff s JOIN dvdrental.address ad ON ad.address_id = s.address_id JOIN dvdrental.city ci ON ci.city_id = ad.city_id JOIN dvdrental.country co ON co.country_id = ci.country_id',
        },
      ],
    },
  ],
};
