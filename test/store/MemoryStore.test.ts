import * as MemoryStore from "../../src/store/MemoryStore.js"
import { contract } from "./contract.js"

contract("memory", () => MemoryStore.layer)
