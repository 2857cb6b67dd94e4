/** The MySQL employees sample database: transcribed structure (see ../README.md for the source). */
import type { RealSource } from '../model.js';

export const employees: RealSource = {
  id: 'employees',
  title: 'The MySQL employees sample database',
  citation: [{ repo: 'datacharmer/test_db', path: 'employees.sql', commit: '3c7fa05e04b4c339d91a43b7029a210212d48e6c' }],
  schemas: [
    {
      name: 'employees',
      types: [
        { name: 'employee_gender', enum: ['M', 'F'] },
      ],
      tables: [
        {
          name: 'departments',
          columns: [
            'dept_no character(4) NOT NULL',
            'dept_name character varying(40) NOT NULL',
          ],
          pk: ['dept_no'],
        },
        {
          name: 'dept_emp',
          columns: [
            'emp_no integer NOT NULL',
            'dept_no character(4) NOT NULL',
            'from_date date NOT NULL',
            'to_date date NOT NULL',
          ],
          pk: ['emp_no', 'dept_no'],
          fks: [
            'dept_no -> employees.departments(dept_no)',
            'emp_no -> employees.employees(emp_no)',
          ],
        },
        {
          name: 'dept_manager',
          columns: [
            'emp_no integer NOT NULL',
            'dept_no character(4) NOT NULL',
            'from_date date NOT NULL',
            'to_date date NOT NULL',
          ],
          pk: ['emp_no', 'dept_no'],
          fks: [
            'dept_no -> employees.departments(dept_no)',
            'emp_no -> employees.employees(emp_no)',
          ],
        },
        {
          name: 'employees',
          columns: [
            'emp_no integer NOT NULL',
            'birth_date date NOT NULL',
            'first_name character varying(14) NOT NULL',
            'last_name character varying(16) NOT NULL',
            'gender employees.employee_gender NOT NULL',
            'hire_date date NOT NULL',
          ],
          pk: ['emp_no'],
        },
        {
          name: 'salaries',
          columns: [
            'emp_no integer NOT NULL',
            'salary integer NOT NULL',
            'from_date date NOT NULL',
            'to_date date NOT NULL',
          ],
          pk: ['emp_no', 'from_date'],
          fks: [
            'emp_no -> employees.employees(emp_no)',
          ],
        },
        {
          name: 'titles',
          columns: [
            'emp_no integer NOT NULL',
            'title character varying(50) NOT NULL',
            'from_date date NOT NULL',
            'to_date date',
          ],
          pk: ['emp_no', 'title', 'from_date'],
          fks: [
            'emp_no -> employees.employees(emp_no)',
          ],
        },
      ],
      views: [
        {
          name: 'current_dept_emp',
          columns: [
            'emp_no integer',
            'dept_no character(4)',
            'from_date date',
            'to_date date',
          ],
          sql: 'SELECT d.emp_no, d.dept_no, d.from_date, d.to_date FROM employees.dept_emp d WHERE (d.emp_no, d.to_date) IN (SELECT emp_no, max(to_date) FROM employees.dept_emp GROUP BY emp_no)',
        },
        {
          name: 'dept_emp_latest_date',
          columns: [
            'emp_no integer',
            'from_date date',
            'to_date date',
          ],
          sql: 'SELECT emp_no, max(from_date), max(to_date) FROM employees.dept_emp GROUP BY emp_no',
        },
      ],
    },
  ],
};
