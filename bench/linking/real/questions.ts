/**
 * Business questions over the real schemas, written the way people ask them (their words, not the
 * tables'), each with the answer tables a correct SQL needs (the minimal set, named as the catalog
 * names them: `schema.table`), other minimal sets that answer it as well (a view, another join
 * path), the source it belongs to, a class, and whether it is clear or genuinely ambiguous.
 *
 * Classes:
 * - synonym: the user's word is not the schema's (movies/film, songs/track, vendors/suppliers…);
 * - generic: a word many sources share (customers, orders, sales, store, employees) next to words
 *   that settle which source is meant;
 * - fact: a fact table no word of the question names (revenue → payments, order lines);
 * - literal: a value of the data named in the question (capitals or lower case);
 * - structure: the answer needs a chain of joins the words do not spell out;
 * - plain: the question names its tables more or less directly.
 *
 * `clear: false` marks a question a careful analyst could not answer without asking which source
 * or which table is meant: a clarifying question is the right answer there (reported apart).
 *
 * The split (dev ~60 %, held-out test ~40 %) is a hash of the id: stable when questions are added.
 */
import { createHash } from 'node:crypto';

export type QuestionClass = 'synonym' | 'generic' | 'fact' | 'literal' | 'structure' | 'plain';
export const QUESTION_CLASSES: readonly QuestionClass[] = ['synonym', 'generic', 'fact', 'literal', 'structure', 'plain'];

export interface RealQuestion {
  id: string;
  /** a source id (sources.ts) */
  source: string;
  class: QuestionClass;
  question: string;
  /** the answer tables, `schema.table`, sorted */
  tables: string[];
  /** other minimal sets that answer the question as well (a view instead of its tables, another join path) */
  alternatives?: string[][];
  /** false: genuinely ambiguous, a clarifying question is right */
  clear: boolean;
  split: 'dev' | 'test';
}

type Opts = { alt?: string[][]; ambiguous?: boolean };

/** `dvdrental`, `film` → `dvdrental.film`; a name with a dot is kept */
const inSchema = (schema: string) => (names: string[]): string[] => names.map((n) => (n.includes('.') ? n : `${schema}.${n}`)).sort();

export function splitOf(id: string): 'dev' | 'test' {
  const h = createHash('sha256').update(`cortado real linking ${id}`).digest();
  return h[0]! < 154 ? 'dev' : 'test'; // 154/256 ≈ 60 %
}

function build(source: string, schema: string, rows: Array<[string, QuestionClass, string, string[], Opts?]>): RealQuestion[] {
  const names = inSchema(schema);
  return rows.map(([id, cls, question, tables, opts]) => {
    const q: RealQuestion = { id, source, class: cls, question, tables: names(tables), clear: !opts?.ambiguous, split: splitOf(id) };
    if (opts?.alt) q.alternatives = opts.alt.map(names);
    return q;
  });
}

const DVD = build('dvdrental', 'dvdrental', [
  ['dvd-01', 'synonym', 'How many movies are in each genre?', ['category', 'film_category'], { alt: [['film_list']] }],
  ['dvd-02', 'fact', 'Which film categories bring in the most rental revenue?', ['category', 'film_category', 'inventory', 'rental', 'payment'], { alt: [['sales_by_film_category'], ['rental_by_category']] }],
  ['dvd-03', 'synonym', 'What were the total rental takings per store in July 2022?', ['payment', 'staff'], { alt: [['payment', 'rental', 'inventory']] }],
  ['dvd-04', 'literal', 'How many PG-13 films are there?', ['film']],
  ['dvd-05', 'plain', 'Which actors have appeared in the most films?', ['actor', 'film_actor']],
  ['dvd-06', 'synonym', 'Which DVDs are out on rent right now and not back yet?', ['rental', 'inventory', 'film']],
  ['dvd-07', 'synonym', 'Who are our top 10 renters by number of rentals?', ['customer', 'rental']],
  ['dvd-08', 'literal', 'How many copies of ACADEMY DINOSAUR does each store hold?', ['film', 'inventory']],
  ['dvd-09', 'literal', 'What is the average rental rate of Comedy films?', ['film', 'film_category', 'category'], { alt: [['film_list']] }],
  ['dvd-10', 'literal', 'list the horror movies longer than two hours', ['film', 'film_category', 'category'], { alt: [['film_list']] }],
  ['dvd-11', 'structure', 'Which countries do our film renters come from, and how many per country?', ['customer', 'address', 'city', 'country'], { alt: [['customer_list']] }],
  ['dvd-12', 'generic', 'How much has each customer paid us in rental fees in total?', ['customer', 'payment']],
  ['dvd-13', 'synonym', 'Which movies have never been rented?', ['film', 'inventory', 'rental']],
  ['dvd-14', 'literal', 'How many of our films are in French?', ['film', 'language']],
  ['dvd-15', 'plain', 'Which staff member of the rental shops processed the most payments?', ['staff', 'payment']],
  ['dvd-16', 'plain', 'Average film length by MPAA rating', ['film']],
  ['dvd-17', 'fact', 'How much rental income did the films featuring each actor bring in?', ['actor', 'film_actor', 'inventory', 'rental', 'payment']],
  ['dvd-18', 'generic', 'How many active rental customers does each of the two video stores have?', ['customer']],
  ['dvd-19', 'fact', 'What share of rentals come back late, per film category?', ['rental', 'inventory', 'film', 'film_category', 'category']],
  ['dvd-20', 'literal', 'Which customers have rented ZORRO ARK?', ['customer', 'rental', 'inventory', 'film']],
  ['dvd-21', 'structure', 'In which cities are our video rental stores located?', ['store', 'address', 'city']],
  ['dvd-22', 'literal', 'What is the total replacement cost of the films in the Children category?', ['film', 'film_category', 'category']],
]);

const CHINOOK = build('chinook', 'chinook', [
  ['mus-01', 'synonym', 'Which songs sold the most copies?', ['track', 'invoice_line']],
  ['mus-02', 'literal', 'List all the tracks by Iron Maiden', ['artist', 'album', 'track']],
  ['mus-03', 'synonym', 'How many listeners do we have in each country?', ['customer']],
  ['mus-04', 'fact', 'Revenue by music genre', ['genre', 'track', 'invoice_line']],
  ['mus-05', 'literal', 'How many Jazz tracks are longer than five minutes?', ['genre', 'track']],
  ['mus-06', 'synonym', 'Which sales support agent brought in the most invoiced revenue through their customers?', ['employee', 'customer', 'invoice']],
  ['mus-07', 'plain', 'Which artists have released the most albums?', ['artist', 'album']],
  ['mus-08', 'literal', 'What songs are in the Grunge playlist?', ['playlist', 'playlist_track', 'track']],
  ['mus-09', 'literal', 'Who does Jane Peacock report to?', ['employee']],
  ['mus-10', 'synonym', 'Top 5 countries by music sales in 2021', ['invoice'], { alt: [['invoice', 'customer']] }],
  ['mus-11', 'literal', 'how many songs are sold as protected AAC audio file?', ['track', 'media_type']],
  ['mus-12', 'fact', 'Which albums earn the most money?', ['album', 'track', 'invoice_line']],
  ['mus-13', 'synonym', 'Average bill per music listener in Brazil', ['invoice'], { alt: [['invoice', 'customer']] }],
  ['mus-14', 'literal', 'Which customers bought Metallica songs?', ['customer', 'invoice', 'invoice_line', 'track', 'album', 'artist']],
  ['mus-15', 'plain', 'What is the total playing time of each album, in minutes?', ['album', 'track']],
  ['mus-16', 'synonym', 'Which composers wrote the most songs in our catalogue?', ['track']],
  ['mus-17', 'literal', 'How much has Leonie Köhler spent on music?', ['customer', 'invoice']],
  ['mus-18', 'literal', 'Which playlists contain Bossa Nova songs?', ['playlist', 'playlist_track', 'track', 'genre']],
]);

const NORTHWIND = build('northwind', 'northwind', [
  ['nw-01', 'literal', 'How many orders were shipped with Speedy Express?', ['orders', 'shippers']],
  ['nw-02', 'literal', 'total sales of seafood in 1997', ['categories', 'products', 'order_details', 'orders']],
  ['nw-03', 'synonym', 'Which vendors supply our beverages?', ['suppliers', 'products', 'categories']],
  ['nw-04', 'fact', 'Revenue per food category, from beverages to seafood', ['categories', 'products', 'order_details']],
  ['nw-05', 'generic', 'Which sales representatives booked the most orders of dairy products?', ['employees', 'orders', 'order_details', 'products', 'categories']],
  ['nw-06', 'literal', 'What did Alfreds Futterkiste order in 1997?', ['customers', 'orders', 'order_details', 'products']],
  ['nw-07', 'structure', 'Which sales territories does Nancy Davolio cover?', ['employees', 'employee_territories', 'territories']],
  ['nw-08', 'fact', 'Average freight charge per shipping company', ['orders', 'shippers']],
  ['nw-09', 'literal', 'Which of our food suppliers are based in Japan?', ['suppliers']],
  ['nw-10', 'plain', 'How many discontinued products does each supplier have?', ['products', 'suppliers']],
  ['nw-11', 'literal', 'Which wholesale clients ordered Côte de Blaye?', ['customers', 'orders', 'order_details', 'products']],
  ['nw-12', 'literal', 'How many sales territories fall under the Eastern region?', ['region', 'territories']],
  ['nw-13', 'literal', 'Who reports to Andrew Fuller?', ['employees']],
  ['nw-14', 'plain', 'How many orders shipped to Brazil went out after their required date?', ['orders']],
  ['nw-15', 'synonym', 'What is the value of the stock on hand per food category?', ['products', 'categories']],
  ['nw-16', 'literal', 'List the US states in the west region', ['us_states']],
  ['nw-17', 'generic', 'Which customers ordered grains or cereals but never confections?', ['customers', 'orders', 'order_details', 'products', 'categories']],
  ['nw-18', 'fact', "How much did we sell of Chef Anton's products after discounts?", ['products', 'order_details']],
]);

const AW = build('adventureworks', 'sales', [
  ['aw-01', 'synonym', 'Which bikes brought in the most revenue in 2013?', ['production.product', 'production.productsubcategory', 'production.productcategory', 'salesorderdetail', 'salesorderheader']],
  ['aw-02', 'generic', 'Total sales per sales territory', ['salesorderheader', 'salesterritory']],
  ['aw-03', 'literal', 'How many employees work the Night shift?', ['humanresources.employeedepartmenthistory', 'humanresources.shift']],
  ['aw-04', 'plain', 'Which vendors of bike parts have the best credit rating?', ['purchasing.vendor']],
  ['aw-05', 'fact', 'How much did we spend on purchase orders with each vendor in 2013?', ['purchasing.purchaseorderheader', 'purchasing.vendor']],
  ['aw-06', 'literal', 'How many Mountain Bikes were sold in the Germany territory?', ['salesorderdetail', 'salesorderheader', 'salesterritory', 'production.product', 'production.productsubcategory']],
  ['aw-07', 'literal', 'Show the list price history of the Sport-100 Helmet, Red', ['production.product', 'production.productlistpricehistory']],
  ['aw-08', 'synonym', 'Which reason do online bike buyers give most often for their purchase?', ['salesorderheader', 'salesorderheadersalesreason', 'salesreason']],
  ['aw-09', 'literal', 'How many units were scrapped because the Paint process failed?', ['production.workorder', 'production.scrapreason']],
  ['aw-10', 'synonym', 'Which bike salespeople are ahead of their sales quota this year?', ['salesperson', 'person.person']],
  ['aw-11', 'literal', 'Which products are kept in Paint Storage, and how many units of each?', ['production.productinventory', 'production.location', 'production.product']],
  ['aw-12', 'literal', 'How many customer orders were shipped via OVERSEAS - DELUXE?', ['salesorderheader', 'purchasing.shipmethod']],
  ['aw-13', 'literal', 'Average discount on order lines under the Volume Discount 11 to 14 offer', ['salesorderdetail', 'specialoffer']],
  ['aw-14', 'synonym', 'Which currencies do we convert into most often?', ['currencyrate', 'currency']],
  ['aw-15', 'synonym', 'What does each bicycle frame cost us to make?', ['production.product', 'production.productsubcategory']],
  ['aw-16', 'literal', 'Which employees are Design Engineers, and when were they hired?', ['humanresources.employee', 'person.person']],
  ['aw-17', 'literal', 'Show the bill of materials of the HL Road Frame - Black, 58', ['production.billofmaterials', 'production.product']],
  ['aw-18', 'synonym', 'Which bike resellers placed the largest orders?', ['store', 'customer', 'salesorderheader']],
  ['aw-19', 'structure', 'How many bike customers do we have in each state or province?', ['customer', 'person.businessentityaddress', 'person.address', 'person.stateprovince'], { alt: [['salesorderheader', 'person.address', 'person.stateprovince']] }],
  ['aw-20', 'literal', 'Which products got reviews with a rating below 3?', ['production.productreview', 'production.product']],
  ['aw-21', 'synonym', 'What is the pay rate history of our buyers?', ['humanresources.employeepayhistory', 'humanresources.employee']],
  ['aw-22', 'generic', 'Which credit card types do bike shop customers pay their orders with most?', ['salesorderheader', 'creditcard']],
  ['aw-23', 'structure', 'Which product models have a description in French?', ['production.productmodel', 'production.productmodelproductdescriptionculture', 'production.culture']],
  ['aw-24', 'plain', 'How many manufacturing work orders finished after their due date?', ['production.workorder']],
]);

const TPCH = build('tpch', 'tpch', [
  ['h-01', 'synonym', 'Revenue per country for orders placed in 1995', ['lineitem', 'orders', 'customer', 'nation']],
  ['h-02', 'literal', 'How many order lines were shipped by AIR or REG AIR?', ['lineitem']],
  ['h-03', 'literal', 'Which parts suppliers in GERMANY have the highest account balance?', ['supplier', 'nation']],
  ['h-04', 'fact', 'Which parts have the lowest supply cost among suppliers in Europe?', ['partsupp', 'part', 'supplier', 'nation', 'region']],
  ['h-05', 'literal', 'What share of orders come from customers in the BUILDING market segment?', ['orders', 'customer']],
  ['h-06', 'literal', 'How many urgent orders were placed each year?', ['orders']],
  ['h-07', 'fact', 'Discounted line-item revenue by ship mode', ['lineitem']],
  ['h-08', 'literal', 'Which nations belong to the MIDDLE EAST region?', ['nation', 'region']],
  ['h-09', 'synonym', 'Which vendors can supply Brand#13 parts, and how many units do they have available?', ['partsupp', 'part', 'supplier']],
  ['h-10', 'plain', 'Average quantity per line item for lines with return flag R', ['lineitem']],
  ['h-11', 'fact', 'Top 10 customers by revenue lost to line items returned with return flag R', ['customer', 'orders', 'lineitem']],
  ['h-12', 'plain', 'How many clerks processed orders in 1996?', ['orders']],
  ['h-13', 'literal', 'Which parts come in a LG CASE container?', ['part']],
  ['h-14', 'fact', 'Profit per part type and year, net of supply cost', ['lineitem', 'partsupp', 'part', 'orders']],
]);

const TPCDS = build('tpcds', 'tpcds', [
  ['ds-01', 'plain', 'Store sales revenue per month in 2001', ['store_sales', 'date_dim']],
  ['ds-02', 'literal', 'How much did we sell in the Books category through the web?', ['web_sales', 'item']],
  ['ds-03', 'synonym', 'What are the most common reasons for returns at our stores?', ['store_returns', 'reason']],
  ['ds-04', 'literal', 'Catalog sales shipped by UPS', ['catalog_sales', 'ship_mode']],
  ['ds-05', 'generic', 'Which stores had the highest net profit on weekends?', ['store_sales', 'store', 'date_dim']],
  ['ds-06', 'literal', 'How much do shoppers with an Advanced Degree spend in stores?', ['store_sales', 'customer_demographics']],
  ['ds-07', 'structure', 'Which call center handles the most catalog returns?', ['catalog_returns', 'call_center']],
  ['ds-08', 'synonym', 'Quantity on hand per warehouse in the first week of 2000', ['inventory', 'warehouse', 'date_dim']],
  ['ds-09', 'fact', 'Revenue by item category across store, catalog and web channels', ['store_sales', 'catalog_sales', 'web_sales', 'item']],
  ['ds-10', 'literal', 'Which promotions ran on TV?', ['promotion']],
  ['ds-11', 'literal', 'Store sales in Williamson County on Saturdays', ['store_sales', 'store', 'date_dim']],
  ['ds-12', 'literal', 'How much did households in the 0-500 buy potential band spend in stores?', ['store_sales', 'household_demographics']],
  ['ds-13', 'plain', 'Average current price of items by brand', ['item']],
  ['ds-14', 'structure', 'Which web sites sold the most in 2000?', ['web_sales', 'web_site', 'date_dim']],
  ['ds-15', 'fact', 'Net loss from store returns per store', ['store_returns', 'store']],
  ['ds-16', 'generic', 'How many retail customers were born in Brazil?', ['customer']],
]);

const AIRLINES = build('airlines', 'bookings', [
  ['air-01', 'synonym', 'How many passengers flew from Moscow to St. Petersburg?', ['flights', 'ticket_flights', 'airports_data'], { alt: [['flights', 'ticket_flights', 'airports'], ['flights_v', 'ticket_flights'], ['flights', 'boarding_passes', 'airports_data'], ['flights', 'boarding_passes', 'airports'], ['flights_v', 'boarding_passes']] }],
  ['air-02', 'literal', 'How many flights were cancelled?', ['flights']],
  ['air-03', 'synonym', 'Which plane models can fly the farthest?', ['aircrafts_data'], { alt: [['aircrafts']] }],
  ['air-04', 'fact', 'Ticket revenue per flight number in August 2017', ['ticket_flights', 'flights']],
  ['air-05', 'literal', 'How many Business class seats does each aircraft have?', ['seats']],
  ['air-06', 'synonym', 'Average booking value per month', ['bookings']],
  ['air-07', 'literal', 'How many delayed flights left from Vnukovo airport?', ['flights', 'airports_data'], { alt: [['flights', 'airports'], ['flights_v']] }],
  ['air-08', 'structure', 'Which passengers were given seat 2A on their boarding pass?', ['boarding_passes', 'tickets']],
  ['air-09', 'synonym', 'Average ticket price by travel class', ['ticket_flights']],
  ['air-10', 'plain', 'How many tickets does a booking hold on average?', ['tickets']],
  ['air-11', 'fact', 'Which airports have the most departures?', ['flights', 'airports_data'], { alt: [['flights', 'airports'], ['flights_v']] }],
  ['air-12', 'synonym', 'How full were the Boeing 777-300 flights?', ['flights', 'boarding_passes', 'seats', 'aircrafts_data'], { alt: [['flights', 'boarding_passes', 'seats', 'aircrafts']] }],
  ['air-13', 'literal', 'Which routes does the Sukhoi Superjet-100 fly?', ['flights', 'aircrafts_data'], { alt: [['flights', 'aircrafts'], ['routes', 'aircrafts_data'], ['routes', 'aircrafts']] }],
]);

const WORLD = build('world', 'world', [
  ['w-01', 'plain', 'Which countries of the world have the largest population?', ['country']],
  ['w-02', 'literal', 'What languages are spoken in Canada?', ['country', 'country_language']],
  ['w-03', 'synonym', 'Which nations gained independence after 1950?', ['country']],
  ['w-04', 'plain', 'Which are the biggest cities in Europe by population?', ['city', 'country']],
  ['w-05', 'literal', 'Average life expectancy in South America', ['country']],
  ['w-06', 'fact', 'How many people speak Spanish worldwide?', ['country_language', 'country']],
  ['w-07', 'structure', 'What is the capital city of Australia?', ['country', 'city']],
  ['w-08', 'literal', 'show the flag emoji of each country in oceania', ['country', 'country_flag']],
  ['w-09', 'synonym', 'GNP per head for each continent', ['country']],
  ['w-10', 'literal', 'Which countries are Federal Republics?', ['country']],
]);

const EMPLOYEES = build('employees', 'employees', [
  ['emp-01', 'synonym', 'Average salary per department', ['salaries', 'dept_emp', 'departments']],
  ['emp-02', 'literal', 'How many Senior Engineers are there today?', ['titles']],
  ['emp-03', 'literal', 'Who has managed the Sales department over the years?', ['dept_manager', 'departments', 'employees']],
  ['emp-04', 'fact', 'Average yearly salary increase', ['salaries']],
  ['emp-05', 'structure', 'Which department did Georgi Facello work in?', ['employees', 'dept_emp', 'departments'], { alt: [['employees', 'current_dept_emp', 'departments']] }],
  ['emp-06', 'literal', 'How many people work in Customer Service now?', ['dept_emp', 'departments'], { alt: [['current_dept_emp', 'departments']] }],
  ['emp-07', 'plain', 'Which employees have worked in more than one department?', ['dept_emp', 'employees']],
  ['emp-08', 'synonym', 'Highest salary ever paid to a Technique Leader', ['titles', 'salaries']],
]);

/** Questions a careful analyst would have to ask back about: which source, or which table. */
const AMBIGUOUS: RealQuestion[] = [
  ...build('northwind', 'northwind', [
    ['amb-01', 'generic', 'Which customers live in Canada?', ['customers'], { ambiguous: true }],
    ['amb-02', 'fact', 'Revenue by category', ['categories', 'products', 'order_details'], { ambiguous: true }],
    ['amb-03', 'generic', 'Which suppliers are in Germany?', ['suppliers'], { ambiguous: true }],
    ['amb-04', 'generic', 'Which products are running low on stock and need reordering?', ['products'], { ambiguous: true }],
    ['amb-05', 'generic', 'How many orders did we get last year?', ['orders'], { ambiguous: true }],
  ]),
  ...build('employees', 'employees', [
    ['amb-06', 'generic', 'Headcount per department', ['dept_emp', 'departments'], { ambiguous: true }],
    ['amb-07', 'generic', 'Gender split of the staff hired since 1995', ['employees'], { ambiguous: true }],
    ['amb-08', 'generic', 'Which job titles have the highest average pay?', ['titles', 'salaries'], { ambiguous: true }],
  ]),
  ...build('chinook', 'chinook', [
    ['amb-09', 'generic', 'Who are our top 10 customers by sales?', ['customer', 'invoice'], { ambiguous: true }],
  ]),
];

export const QUESTIONS: readonly RealQuestion[] = [...DVD, ...CHINOOK, ...NORTHWIND, ...AW, ...TPCH, ...TPCDS, ...AIRLINES, ...WORLD, ...EMPLOYEES, ...AMBIGUOUS];
