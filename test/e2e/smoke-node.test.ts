import { smokeSuite } from '../support/smoke.ts'

smokeSuite('node')
