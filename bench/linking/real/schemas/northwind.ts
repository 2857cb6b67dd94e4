/** Northwind Traders, a wholesale food trader: transcribed structure (see ../README.md for the source). */
import type { RealSource } from '../model.js';

export const northwind: RealSource = {
  id: 'northwind',
  title: 'Northwind Traders, a wholesale food trader',
  citation: [{ repo: 'pthom/northwind_psql', path: 'northwind.sql', commit: 'cd0ef28d66369fbe177778e604e4be0f153c9e5c' }],
  schemas: [
    {
      name: 'northwind',
      tables: [
        {
          name: 'categories',
          columns: [
            'category_id smallint NOT NULL',
            'category_name character varying(15) NOT NULL',
            'description text',
            'picture bytea',
          ],
          pk: ['category_id'],
        },
        {
          name: 'customer_customer_demo',
          columns: [
            'customer_id character varying(5) NOT NULL',
            'customer_type_id character varying(5) NOT NULL',
          ],
          pk: ['customer_id', 'customer_type_id'],
          fks: [
            'customer_type_id -> northwind.customer_demographics(customer_type_id)',
            'customer_id -> northwind.customers(customer_id)',
          ],
        },
        {
          name: 'customer_demographics',
          columns: [
            'customer_type_id character varying(5) NOT NULL',
            'customer_desc text',
          ],
          pk: ['customer_type_id'],
        },
        {
          name: 'customers',
          columns: [
            'customer_id character varying(5) NOT NULL',
            'company_name character varying(40) NOT NULL',
            'contact_name character varying(30)',
            'contact_title character varying(30)',
            'address character varying(60)',
            'city character varying(15)',
            'region character varying(15)',
            'postal_code character varying(10)',
            'country character varying(15)',
            'phone character varying(24)',
            'fax character varying(24)',
          ],
          pk: ['customer_id'],
        },
        {
          name: 'employee_territories',
          columns: [
            'employee_id smallint NOT NULL',
            'territory_id character varying(20) NOT NULL',
          ],
          pk: ['employee_id', 'territory_id'],
          fks: [
            'employee_id -> northwind.employees(employee_id)',
            'territory_id -> northwind.territories(territory_id)',
          ],
        },
        {
          name: 'employees',
          columns: [
            'employee_id smallint NOT NULL',
            'last_name character varying(20) NOT NULL',
            'first_name character varying(10) NOT NULL',
            'title character varying(30)',
            'title_of_courtesy character varying(25)',
            'birth_date date',
            'hire_date date',
            'address character varying(60)',
            'city character varying(15)',
            'region character varying(15)',
            'postal_code character varying(10)',
            'country character varying(15)',
            'home_phone character varying(24)',
            'extension character varying(4)',
            'photo bytea',
            'notes text',
            'reports_to smallint',
            'photo_path character varying(255)',
          ],
          pk: ['employee_id'],
          fks: [
            'reports_to -> northwind.employees(employee_id)',
          ],
        },
        {
          name: 'order_details',
          columns: [
            'order_id smallint NOT NULL',
            'product_id smallint NOT NULL',
            'unit_price real NOT NULL',
            'quantity smallint NOT NULL',
            'discount real NOT NULL',
          ],
          pk: ['order_id', 'product_id'],
          fks: [
            'order_id -> northwind.orders(order_id)',
            'product_id -> northwind.products(product_id)',
          ],
        },
        {
          name: 'orders',
          columns: [
            'order_id smallint NOT NULL',
            'customer_id character varying(5)',
            'employee_id smallint',
            'order_date date',
            'required_date date',
            'shipped_date date',
            'ship_via smallint',
            'freight real',
            'ship_name character varying(40)',
            'ship_address character varying(60)',
            'ship_city character varying(15)',
            'ship_region character varying(15)',
            'ship_postal_code character varying(10)',
            'ship_country character varying(15)',
          ],
          pk: ['order_id'],
          fks: [
            'customer_id -> northwind.customers(customer_id)',
            'employee_id -> northwind.employees(employee_id)',
            'ship_via -> northwind.shippers(shipper_id)',
          ],
        },
        {
          name: 'products',
          columns: [
            'product_id smallint NOT NULL',
            'product_name character varying(40) NOT NULL',
            'supplier_id smallint',
            'category_id smallint',
            'quantity_per_unit character varying(20)',
            'unit_price real',
            'units_in_stock smallint',
            'units_on_order smallint',
            'reorder_level smallint',
            'discontinued integer NOT NULL',
          ],
          pk: ['product_id'],
          fks: [
            'category_id -> northwind.categories(category_id)',
            'supplier_id -> northwind.suppliers(supplier_id)',
          ],
        },
        {
          name: 'region',
          columns: [
            'region_id smallint NOT NULL',
            'region_description character varying(60) NOT NULL',
          ],
          pk: ['region_id'],
        },
        {
          name: 'shippers',
          columns: [
            'shipper_id smallint NOT NULL',
            'company_name character varying(40) NOT NULL',
            'phone character varying(24)',
          ],
          pk: ['shipper_id'],
        },
        {
          name: 'suppliers',
          columns: [
            'supplier_id smallint NOT NULL',
            'company_name character varying(40) NOT NULL',
            'contact_name character varying(30)',
            'contact_title character varying(30)',
            'address character varying(60)',
            'city character varying(15)',
            'region character varying(15)',
            'postal_code character varying(10)',
            'country character varying(15)',
            'phone character varying(24)',
            'fax character varying(24)',
            'homepage text',
          ],
          pk: ['supplier_id'],
        },
        {
          name: 'territories',
          columns: [
            'territory_id character varying(20) NOT NULL',
            'territory_description character varying(60) NOT NULL',
            'region_id smallint NOT NULL',
          ],
          pk: ['territory_id'],
          fks: [
            'region_id -> northwind.region(region_id)',
          ],
        },
        {
          name: 'us_states',
          columns: [
            'state_id smallint NOT NULL',
            'state_name character varying(100)',
            'state_abbr character varying(2)',
            'state_region character varying(50)',
          ],
          pk: ['state_id'],
        },
      ],
    },
  ],
};
