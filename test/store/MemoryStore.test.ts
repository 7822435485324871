import * as MemoryStore from "../../src/store/MemoryStore.js"
import { contract } from "../../src/store/VectorStoreContract.js"

contract("memory", () => MemoryStore.layer)
