// Where a UDP receive thread starts (receive-threads.ts); in the single executable, its own small bundle.
import dgram from 'node:dgram';
import { parentPort, workerData } from 'node:worker_threads';
import { receiveThread, type ThreadData } from './receive-thread.ts';

receiveThread(workerData as ThreadData, parentPort!, dgram);
