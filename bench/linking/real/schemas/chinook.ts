/** Chinook, a digital music store: transcribed structure (see ../README.md for the source). */
import type { RealSource } from '../model.js';

export const chinook: RealSource = {
  id: 'chinook',
  title: 'Chinook, a digital music store',
  citation: [{ repo: 'lerocha/chinook-database', path: 'ChinookDatabase/DataSources/Chinook_PostgreSql.sql', commit: '7f67772503d71ba90f19283c38e93923addb43fa' }],
  schemas: [
    {
      name: 'chinook',
      tables: [
        {
          name: 'album',
          columns: [
            'album_id integer NOT NULL',
            'title character varying(160) NOT NULL',
            'artist_id integer NOT NULL',
          ],
          pk: ['album_id'],
          fks: [
            'artist_id -> chinook.artist(artist_id)',
          ],
        },
        {
          name: 'artist',
          columns: [
            'artist_id integer NOT NULL',
            'name character varying(120)',
          ],
          pk: ['artist_id'],
        },
        {
          name: 'customer',
          columns: [
            'customer_id integer NOT NULL',
            'first_name character varying(40) NOT NULL',
            'last_name character varying(20) NOT NULL',
            'company character varying(80)',
            'address character varying(70)',
            'city character varying(40)',
            'state character varying(40)',
            'country character varying(40)',
            'postal_code character varying(10)',
            'phone character varying(24)',
            'fax character varying(24)',
            'email character varying(60) NOT NULL',
            'support_rep_id integer',
          ],
          pk: ['customer_id'],
          fks: [
            'support_rep_id -> chinook.employee(employee_id)',
          ],
        },
        {
          name: 'employee',
          columns: [
            'employee_id integer NOT NULL',
            'last_name character varying(20) NOT NULL',
            'first_name character varying(20) NOT NULL',
            'title character varying(30)',
            'reports_to integer',
            'birth_date timestamp without time zone',
            'hire_date timestamp without time zone',
            'address character varying(70)',
            'city character varying(40)',
            'state character varying(40)',
            'country character varying(40)',
            'postal_code character varying(10)',
            'phone character varying(24)',
            'fax character varying(24)',
            'email character varying(60)',
          ],
          pk: ['employee_id'],
          fks: [
            'reports_to -> chinook.employee(employee_id)',
          ],
        },
        {
          name: 'genre',
          columns: [
            'genre_id integer NOT NULL',
            'name character varying(120)',
          ],
          pk: ['genre_id'],
        },
        {
          name: 'invoice',
          columns: [
            'invoice_id integer NOT NULL',
            'customer_id integer NOT NULL',
            'invoice_date timestamp without time zone NOT NULL',
            'billing_address character varying(70)',
            'billing_city character varying(40)',
            'billing_state character varying(40)',
            'billing_country character varying(40)',
            'billing_postal_code character varying(10)',
            'total numeric(10,2) NOT NULL',
          ],
          pk: ['invoice_id'],
          fks: [
            'customer_id -> chinook.customer(customer_id)',
          ],
        },
        {
          name: 'invoice_line',
          columns: [
            'invoice_line_id integer NOT NULL',
            'invoice_id integer NOT NULL',
            'track_id integer NOT NULL',
            'unit_price numeric(10,2) NOT NULL',
            'quantity integer NOT NULL',
          ],
          pk: ['invoice_line_id'],
          fks: [
            'invoice_id -> chinook.invoice(invoice_id)',
            'track_id -> chinook.track(track_id)',
          ],
        },
        {
          name: 'media_type',
          columns: [
            'media_type_id integer NOT NULL',
            'name character varying(120)',
          ],
          pk: ['media_type_id'],
        },
        {
          name: 'playlist',
          columns: [
            'playlist_id integer NOT NULL',
            'name character varying(120)',
          ],
          pk: ['playlist_id'],
        },
        {
          name: 'playlist_track',
          columns: [
            'playlist_id integer NOT NULL',
            'track_id integer NOT NULL',
          ],
          pk: ['playlist_id', 'track_id'],
          fks: [
            'playlist_id -> chinook.playlist(playlist_id)',
            'track_id -> chinook.track(track_id)',
          ],
        },
        {
          name: 'track',
          columns: [
            'track_id integer NOT NULL',
            'name character varying(200) NOT NULL',
            'album_id integer',
            'media_type_id integer NOT NULL',
            'genre_id integer',
            'composer character varying(220)',
            'milliseconds integer NOT NULL',
            'bytes integer',
            'unit_price numeric(10,2) NOT NULL',
          ],
          pk: ['track_id'],
          fks: [
            'album_id -> chinook.album(album_id)',
            'genre_id -> chinook.genre(genre_id)',
            'media_type_id -> chinook.media_type(media_type_id)',
          ],
        },
      ],
    },
  ],
};
